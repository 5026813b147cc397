"""A real ``stowage serve`` process on loopback ports, for every suite that runs one (e2e,
multinode, reliability): started with extra settings in its environment, optionally under
a wrapper (``fiu-run``) or another entry module, and ready once it listens on both its API
and CDN ports."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.servers.ports import free_port, wait_listening
from tests.servers.procs import run_checked


@dataclass
class StowageServe:
    data_dir: Path
    port: int = field(default_factory=free_port)
    cdn_port: int = field(default_factory=free_port)
    env: dict[str, str] = field(default_factory=dict)  # on top of this process's environment
    log: Path | None = None  # default: serve-<port>.log beside data_dir
    wrapper: list[str] = field(default_factory=list)
    module: list[str] = field(default_factory=lambda: ["-m", "stowage"])
    cwd: Path | None = None  # where it starts (a relative data_dir is taken from there)
    start_timeout: float = 30.0
    stop_timeout: float = 20.0
    proc: subprocess.Popen[bytes] | None = None

    @property
    def api(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def cdn(self) -> str:
        return f"http://127.0.0.1:{self.cdn_port}"

    def environment(self) -> dict[str, str]:
        return {**os.environ, "STOWAGE_FETCH_ALLOW_PRIVATE": "true", **self.env}

    def cli(self, *args: str) -> str:
        argv = [sys.executable, "-m", "stowage", "--data-dir", str(self.data_dir), *args]
        return run_checked(argv, "the stowage command", env=self.environment(), cwd=self.cwd).stdout

    def create_app(self) -> tuple[str, str]:
        created = json.loads(self.cli("apps", "create", "--json"))
        return created["api_key"], created["secret"]

    def start(self) -> None:
        beside = (self.cwd or Path()) / self.data_dir.parent
        self.log = self.log or beside / f"serve-{self.port}.log"
        command = [*self.wrapper, sys.executable, *self.module, "--data-dir", str(self.data_dir)]
        command += ["serve", "--port", str(self.port), "--cdn-port", str(self.cdn_port)]
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, env=self.environment(), cwd=self.cwd
            )
        for port in (self.port, self.cdn_port):
            wait_listening(port, self.proc, self.log, self.start_timeout, "stowage serve")

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> int:
        """SIGTERM, as a supervisor stops it; killed when it outlives ``stop_timeout``."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(self.stop_timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.proc.returncode

    def stop_quietly(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.kill()

    def peak_rss_kib(self) -> int:
        assert self.proc is not None
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
        raise RuntimeError("no VmHWM")


@dataclass
class Running:
    """A started server and an app on it."""

    server: StowageServe
    key: str
    secret: str


def running(data_dir: Path, **options: Any) -> Iterator[Running]:
    """A server with one app, killed at the end if still running (a fixture's body);
    ``options``: other fields of ``StowageServe``."""
    server = StowageServe(data_dir, **options)
    key, secret = server.create_app()
    server.start()
    try:
        yield Running(server, key, secret)
    finally:
        server.stop_quietly()
