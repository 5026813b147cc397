"""End-to-end: the real ``stowage serve`` process on loopback ports."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.servers.ports import free_port, wait_listening


@dataclass
class Server:
    data_dir: Path
    port: int = field(default_factory=free_port)
    cdn_port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None
    log: Path | None = None

    @property
    def api(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def cdn(self) -> str:
        return f"http://127.0.0.1:{self.cdn_port}"

    def cli(self, *args: str) -> str:
        out = subprocess.run(
            [sys.executable, "-m", "stowage", "--data-dir", str(self.data_dir), *args],
            check=True,
            capture_output=True,
            text=True,
        )
        return out.stdout

    def start(self) -> None:
        self.log = self.data_dir.parent / f"serve-{self.port}.log"
        env = {**os.environ, "STOWAGE_FETCH_ALLOW_PRIVATE": "true"}
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "stowage",
                "--data-dir",
                str(self.data_dir),
                "serve",
                "--port",
                str(self.port),
                "--cdn-port",
                str(self.cdn_port),
            ],
            stdout=self.log.open("ab"),
            stderr=subprocess.STDOUT,
            env=env,
        )
        wait_listening(self.port, self.proc, self.log, 20, "stowage serve")
        wait_listening(self.cdn_port, self.proc, self.log, 20, "stowage serve")

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            return self.proc.wait(20)
        return self.proc.returncode

    def peak_rss_kib(self) -> int:
        assert self.proc is not None
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
        raise RuntimeError("no VmHWM")


@dataclass
class Running:
    server: Server
    key: str
    secret: str


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Running]:
    yield from _running(tmp_path)


@pytest.fixture
def json_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Running]:
    """The server with ``log_format=json``."""
    monkeypatch.setenv("STOWAGE_LOG_FORMAT", "json")
    yield from _running(tmp_path)


def _running(tmp_path: Path) -> Iterator[Running]:
    srv = Server(tmp_path / "data")
    created = json.loads(srv.cli("apps", "create", "--json"))
    srv.start()
    try:
        yield Running(srv, created["api_key"], created["secret"])
    finally:
        if srv.proc is not None and srv.proc.poll() is None:
            srv.kill()
