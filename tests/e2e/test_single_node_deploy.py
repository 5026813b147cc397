"""The single-node deployment of docs/deployment.md, run from its own files (deploy/single).

The systemd unit passes ``systemd-analyze verify`` and the node is started the way the
unit starts it: its ``Environment=`` lines and its ``ExecStart=`` command, reading the
guide's ``stowage.toml``. nginx runs the guide's TLS config with a self-signed certificate
for both names. curl then talks to it as a client on the internet would (``--resolve``
points the two names at 127.0.0.1): a store over HTTPS and HTTP/2, the download from the
CDN name, the plain-HTTP redirect. SIGTERM, the unit's ``KillSignal``, ends the node
with exit code 0 within ``TimeoutStopSec``. Only paths, ports and the public URLs' ports
are rewritten; every other line is the guide's.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.multinode.cluster import ROOT, Nginx, nginx_folder
from tests.servers.ports import free_port, wait_listening

SINGLE = ROOT / "deploy" / "single"
VENV_STOWAGE = Path(sys.executable).parent / "stowage"
NAMES = ("files.example.com", "cdn.example.com")


def _sub(pattern: str, replacement: str, text: str, count: int = 1) -> str:
    """A rewrite that must apply: if the guide's file changes shape, the test says so."""
    new, n = re.subn(pattern, replacement, text, flags=re.M)
    assert n == count, f"{pattern!r} matched {n} times, expected {count}"
    return new


def _unit_lines(key: str) -> list[str]:
    text = (SINGLE / "stowage.service").read_text()
    return [m[1] for m in re.finditer(rf"^{key}=(.*)$", text, re.M)]


@dataclass
class Deployed:
    folder: Path
    https: int
    http: int
    node: subprocess.Popen[bytes]
    env: dict[str, str]

    def curl(self, *args: str) -> subprocess.CompletedProcess[str]:
        ports = (self.https, self.http)
        resolve = [f"{name}:{port}:127.0.0.1" for name in NAMES for port in ports]
        resolve = [arg for entry in resolve for arg in ("--resolve", entry)]
        cmd = ["curl", "-sS", "--max-time", "30", "--cacert", str(self.folder / "cert.pem")]
        return subprocess.run([*cmd, *resolve, *args], capture_output=True, text=True)


def _certificate(folder: Path) -> None:
    names = ",".join(f"DNS:{name}" for name in NAMES)
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-keyout", str(folder / "key.pem"), "-out", str(folder / "cert.pem")),
            *("-subj", f"/CN={NAMES[0]}", "-addext", f"subjectAltName={names}"),
        ],
        check=True,
        capture_output=True,
    )


def _config(folder: Path, api: int, cdn: int, https: int) -> Path:
    text = (SINGLE / "stowage.toml").read_text()
    text = _sub(r'^data_dir = "/var/lib/stowage/data"', f'data_dir = "{folder / "data"}"', text)
    text = _sub(r"^port = 8080", f"port = {api}", text)
    text = _sub(r"^cdn_port = 8081", f"cdn_port = {cdn}", text)
    text = _sub(r"https://files\.example\.com/api", f"https://{NAMES[0]}:{https}/api", text)
    text = _sub(r"https://cdn\.example\.com\"", f'https://{NAMES[1]}:{https}"', text)
    path = folder / "stowage.toml"
    path.write_text(text)
    return path


def _nginx_conf(folder: Path, api: int, cdn: int, https: int, http: int) -> str:
    text = (SINGLE / "nginx.conf").read_text()
    text = _sub(r"127\.0\.0\.1:8080;", f"127.0.0.1:{api};", text)
    text = _sub(r"127\.0\.0\.1:8081;", f"127.0.0.1:{cdn};", text)
    text = _sub(r"listen 443 ssl http2;", f"listen 127.0.0.1:{https} ssl http2;", text, 2)
    text = _sub(r"listen 80;", f"listen 127.0.0.1:{http};", text)
    text = _sub(r"/etc/letsencrypt/live/[\w.]+/fullchain\.pem", str(folder / "cert.pem"), text, 2)
    text = _sub(r"/etc/letsencrypt/live/[\w.]+/privkey\.pem", str(folder / "key.pem"), text, 2)
    return text


def _start_node(config: Path, folder: Path) -> tuple[subprocess.Popen[bytes], dict[str, str]]:
    env = dict(os.environ)
    for line in _unit_lines("Environment"):
        name, _, value = line.partition("=")
        env[name] = str(config) if name == "STOWAGE_CONFIG" else value
    (command,) = _unit_lines("ExecStart")
    argv = command.split()
    assert argv[0] == "/opt/stowage/bin/stowage", argv
    argv[0] = str(VENV_STOWAGE)
    log = folder / "node.log"
    node = subprocess.Popen(argv, env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT)
    return node, env


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployed]:
    folder = nginx_folder(tmp_path_factory.mktemp("single-node"))
    api, cdn, https, http = free_port(), free_port(), free_port(), free_port()
    _certificate(folder)
    (folder / "cert.pem").chmod(0o644)
    (folder / "key.pem").chmod(0o644)
    node, env = _start_node(_config(folder, api, cdn, https), folder)
    lb = Nginx(folder, api_port=https, cdn_port=http)
    try:
        wait_listening(api, node, folder / "node.log", 30)
        wait_listening(cdn, node, folder / "node.log", 30)
        lb.run(_nginx_conf(folder, api, cdn, https, http))
        yield Deployed(folder, https, http, node, env)
    finally:
        lb.stop()
        if node.poll() is None:
            node.kill()
            node.wait(10)


def test_the_unit_file_verifies_cleanly(tmp_path: Path) -> None:
    text = (SINGLE / "stowage.service").read_text()
    unit = tmp_path / "stowage.service"
    # verify checks that the command exists: point it at this checkout's stowage.
    unit.write_text(text.replace("/opt/stowage/bin/stowage", str(VENV_STOWAGE)))
    checked = subprocess.run(
        ["systemd-analyze", "verify", str(unit)], capture_output=True, text=True
    )
    assert checked.returncode == 0 and checked.stdout + checked.stderr == "", checked
    (writable,) = _unit_lines("ReadWritePaths")
    data_dir = re.search(r'^data_dir = "(.*)"', (SINGLE / "stowage.toml").read_text(), re.M)
    assert data_dir and Path(data_dir[1]).is_relative_to(writable), "the unit must let it write"


def test_store_and_download_over_https_and_http2(deployed: Deployed) -> None:
    created = subprocess.run(
        [str(VENV_STOWAGE), "apps", "create", "--json"],
        env=deployed.env,
        capture_output=True,
        text=True,
        check=True,
    )
    key = json.loads(created.stdout)["api_key"]
    store = deployed.curl(
        "--http2",
        "-w",
        "\n%{http_code} %{http_version}",
        "--data-binary",
        "deployed through nginx",
        "-H",
        "Content-Type: text/plain",
        f"https://{NAMES[0]}:{deployed.https}/api/store/S3?key={key}",
    )
    body, _, status = store.stdout.rpartition("\n")
    assert status == "200 2", (store.stdout, store.stderr)
    stored = json.loads(body)
    assert stored["url"] == f"https://{NAMES[1]}:{deployed.https}/{stored['handle']}"
    fetched = deployed.curl("-w", "\n%{http_code}", stored["url"])
    assert fetched.stdout == "deployed through nginx\n200", fetched


def test_plain_http_redirects_to_https(deployed: Deployed) -> None:
    answer = deployed.curl(
        "-o",
        "/dev/null",
        "-w",
        "%{http_code} %{redirect_url}",
        f"http://{NAMES[0]}:{deployed.http}/api/file/x",
    )
    assert answer.stdout == f"301 https://{NAMES[0]}/api/file/x", answer


def test_metrics_are_not_served_through_the_proxy(deployed: Deployed) -> None:
    """Issue 24: the shipped TLS config does not forward /metrics (nginx on the node makes
    every client loopback, which metrics_allow lets in); the node's own port still has them."""
    for path in ("/metrics", "/metrics?format=text", "//metrics", "/%6detrics"):
        for name in NAMES:
            answer = deployed.curl("-w", "\n%{http_code}", f"https://{name}:{deployed.https}{path}")
            body, _, status = answer.stdout.rpartition("\n")
            assert status == "404", (name, path, answer.stdout)
            assert "stowage_http_requests_total" not in body
    port = re.search(r"^port = (\d+)", (deployed.folder / "stowage.toml").read_text(), re.M)
    assert port is not None
    api_port = int(port[1])
    direct = subprocess.run(
        ["curl", "-sS", f"http://127.0.0.1:{api_port}/metrics"], capture_output=True, text=True
    )
    assert "stowage_http_requests_total" in direct.stdout, direct


def test_sigterm_ends_the_node_with_exit_code_0(deployed: Deployed) -> None:
    (timeout,) = _unit_lines("TimeoutStopSec")
    (kill_signal,) = _unit_lines("KillSignal")
    deployed.node.send_signal(getattr(signal, kill_signal))
    assert deployed.node.wait(int(timeout)) == 0
