"""A server that a test fixture fails to start says why: the failure carries the server's
own error text, not only "returned non-zero exit status 1" (a clean machine's CI lost 70
tests to one ``initdb`` failure whose output was swallowed). Each server is started with a
deliberately bad option and the message must hold what that server printed about it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.multinode.cluster import Nginx, nginx_folder
from tests.servers import emulators
from tests.servers.fx_postgres import start_postgres
from tests.servers.ports import free_port
from tests.servers.procs import run_checked
from tests.servers.stowage_serve import StowageServe
from tests.servers.varnish import Varnish


def _failure(start: object) -> str:
    assert callable(start)
    with pytest.raises(RuntimeError) as caught:
        start()
    return str(caught.value)


def test_a_failed_command_carries_its_own_stderr() -> None:
    script = "import sys; print('out-text'); sys.exit('err-text')"
    message = _failure(lambda: run_checked([sys.executable, "-c", script], "the script"))
    assert "the script failed with exit status 1" in message
    assert "err-text" in message and "out-text" in message


def test_initdb_failure_shows_initdb_output() -> None:
    message = _failure(lambda: start_postgres(initdb_options=["--no-such-initdb-flag"]))
    assert "initdb" in message and "--no-such-initdb-flag" in message
    assert "unrecognized option" in message or "invalid option" in message, message


def test_postgres_start_failure_shows_its_log() -> None:
    message = _failure(lambda: start_postgres(server_options=["-c", "no_such_setting=1"]))
    assert 'unrecognized configuration parameter "no_such_setting"' in message, message


def test_varnish_start_failure_shows_its_output() -> None:
    varnish = Varnish(backend_port=free_port(), options=["-p", "no_such_parameter=1"])
    try:
        message = _failure(varnish.start)
    finally:
        varnish.stop()
    assert "varnishd exited" in message and "no_such_parameter" in message, message


def test_nginx_start_failure_shows_its_output() -> None:
    nginx = Nginx(nginx_folder())
    try:
        message = _failure(lambda: nginx.run("no_such_directive on;\n"))
    finally:
        nginx.stop()
    assert 'unknown directive "no_such_directive"' in message, message


def test_emulator_start_failure_shows_its_output(tmp_path: Path) -> None:
    port = free_port()
    argv = [sys.executable, "-m", "gcp_storage_emulator", "start", "--no-such-emulator-flag"]
    message = _failure(lambda: emulators.start("gcp", argv, port, tmp_path / "gcs.log", 15))
    assert "unrecognized arguments: --no-such-emulator-flag" in message, message


def test_stowage_start_failure_shows_its_output(tmp_path: Path) -> None:
    server = StowageServe(tmp_path / "data", module=["-m", "stowage", "--no-such-flag"])
    try:
        message = _failure(server.start)
    finally:
        server.stop_quietly()
    assert "stowage serve exited" in message, message
    assert "No such option '--no-such-flag'" in message, message


def test_stowage_command_failure_shows_its_output(tmp_path: Path) -> None:
    server = StowageServe(tmp_path / "data")
    message = _failure(lambda: server.cli("no-such-command"))
    assert "No such command 'no-such-command'" in message, message


def test_ci_prints_a_version_line_per_server() -> None:
    """scripts/test runs every scripts/setup.d step; the last one names what was installed."""
    script = Path(__file__).resolve().parents[1] / "scripts" / "setup.d" / "99-versions.sh"
    out = run_checked(["bash", str(script)], "99-versions.sh").stdout.splitlines()
    servers = [line.split()[1] for line in out if line.startswith("version: ")]
    for name in ("postgresql", "nginx", "varnish", "swift", "moto", "azurite", "libvips"):
        assert servers.count(name) == 1, out
    postgres = next(line for line in out if line.startswith("version: postgresql "))
    assert "PostgreSQL" in postgres, postgres  # installed here, so a real version
