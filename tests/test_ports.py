"""The test servers' port helpers: a server that failed to bind is never taken for started.

CI once ran the whole API suite against a node's CDN listener instead of nginx: nginx's
port had been handed to the node too, nginx failed to bind, and the wait for nginx saw
the node listening and went on.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.servers.ports import _bindable, _reserve, free_port, listens, wait_listening

LISTEN = "import socket,sys,time; s=socket.socket(); s.bind(('127.0.0.1',int(sys.argv[1])));"
LISTEN += "s.listen(); print('up', flush=True); time.sleep(30)"


def test_free_ports_are_never_handed_out_twice_nor_ephemeral() -> None:
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    ports = [free_port() for _ in range(200)]
    assert len(set(ports)) == len(ports)
    assert max(ports) < low


def test_a_port_another_test_process_was_given_is_not_given_again() -> None:
    """Three test processes pick ports at once: one given to another process (its server
    may not have bound it yet) is neither reserved nor handed out here."""
    picked = subprocess.run(
        [sys.executable, "-c", "from tests.servers.ports import free_port; print(free_port())"],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        check=True,
    )
    theirs = int(picked.stdout)
    assert _bindable(theirs)  # free as far as the kernel knows
    assert not _reserve(theirs)
    assert theirs not in {free_port() for _ in range(300)}


def test_the_wait_ends_when_the_started_process_listens(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", LISTEN, str(port)], stdout=subprocess.PIPE)
    try:
        wait_listening(port, proc, tmp_path / "none.log", 10)
        assert listens(port, proc.pid)
    finally:
        proc.kill()
        proc.wait()


def test_a_port_someone_else_listens_on_does_not_count(tmp_path: Path) -> None:
    port = free_port()
    with socket.socket() as other:
        other.bind(("127.0.0.1", port))
        other.listen()
        proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        try:
            assert not listens(port, proc.pid)
            with pytest.raises(RuntimeError, match="not listening"):
                wait_listening(port, proc, tmp_path / "none.log", 0.5)
        finally:
            proc.kill()
            proc.wait()


def test_a_server_that_exits_is_reported_with_its_log(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("bind() failed (98: Address already in use)")
    proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(1)"])
    with pytest.raises(RuntimeError, match="Address already in use"):
        wait_listening(free_port(), proc, log, 10)
