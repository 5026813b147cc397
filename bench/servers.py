"""The three servers the benchmark compares, all on 127.0.0.1 and free ports.

- Stowage: the real ``stowage serve`` (``--workers``), access log off.
- nginx from Debian's packages: ``sendfile on``, ``dav_methods PUT`` for uploads, a
  config generated into the run's temp dir, run as the current user.
- OpenStack Swift's proxy: the tests' all-in-one (tests/servers/swift_aio.py), with
  the proxy and object servers given as many workers as Stowage.
"""

from __future__ import annotations

import json
import os
import pwd
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from tests.servers.ports import free_port, wait_listening
from tests.servers.procs import children, cpu_ticks, descendants, parents
from tests.servers.swift_aio import SwiftAIO

NGINX = "/usr/sbin/nginx"


def cpu_seconds(roots: list[int]) -> float:
    """User + system CPU time of these processes and their children (workers)."""
    parent_of = parents()
    family = {p for root in roots for p in (root, *children(root, parent_of))}
    ticks = sum(cpu_ticks(p) for p in family)
    return ticks / os.sysconf("SC_CLK_TCK")


def _status(pid: int, name: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(name + ":"):
            return int(line.split()[1])
    return 0


@dataclass
class Stowage:
    root: Path
    workers: int
    port: int = field(default_factory=free_port)
    cdn_port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None
    extra_env: dict[str, str] = field(default_factory=dict)  # more STOWAGE_* settings

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def data_dir(self) -> Path:
        return self.root / "stowage-data"

    def cli(self, *args: str) -> str:
        return subprocess.run(
            [sys.executable, "-m", "stowage", "--data-dir", str(self.data_dir), *args],
            check=True,
            capture_output=True,
            text=True,
        ).stdout

    def create_app(self, storage: dict[str, object] | None = None) -> tuple[str, str]:
        extra = ["--storage", json.dumps(storage)] if storage else []
        created = json.loads(self.cli("apps", "create", "--json", *extra))
        return created["api_key"], created["secret"]

    def start(self) -> None:
        log = self.root / "stowage.log"
        env = {
            **os.environ,
            "STOWAGE_ACCESS_LOG": "false",
            "STOWAGE_LOG_LEVEL": "WARNING",
            "STOWAGE_WORKERS": str(self.workers),
            **self.extra_env,
        }
        argv = [sys.executable, "-m", "stowage", "--data-dir", str(self.data_dir), "serve"]
        ports = ["--port", str(self.port), "--cdn-port", str(self.cdn_port)]
        with log.open("ab") as out:
            self.proc = subprocess.Popen(
                [*argv, *ports], stdout=out, stderr=subprocess.STDOUT, env=env
            )
        wait_listening(self.port, self.proc, log, 30)
        deadline = time.monotonic() + 10
        while self.workers > 1 and len(children(self.proc.pid)) < self.workers:
            if time.monotonic() > deadline:
                raise RuntimeError("stowage workers did not start")
            time.sleep(0.05)
        time.sleep(0.5 if self.workers > 1 else 0)  # every worker has bound its socket

    def pids(self) -> list[int]:
        """The server, its workers and their transformation job processes."""
        assert self.proc is not None
        return [self.proc.pid, *descendants(self.proc.pid)]

    def reset_peak(self) -> None:
        """Linux: ``5`` in clear_refs resets VmHWM to the current RSS."""
        for pid in self.pids():
            Path(f"/proc/{pid}/clear_refs").write_text("5")

    def rss_mib(self) -> tuple[float, float]:
        """(largest current RSS, largest peak RSS) over the server's processes, MiB."""
        pids = self.pids()
        return (
            max(_status(p, "VmRSS") for p in pids) / 1024,
            max(_status(p, "VmHWM") for p in pids) / 1024,
        )

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                for pid in self.pids():
                    os.kill(pid, signal.SIGKILL)
                self.proc.wait()


@dataclass
class Nginx:
    root: Path
    workers: int
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def www(self) -> Path:
        return self.root / "www"

    def start(self) -> None:
        prefix = self.root / "nginx"
        for sub in ("body", "tmp"):
            (prefix / sub).mkdir(parents=True, exist_ok=True)
        (self.www / "up").mkdir(parents=True, exist_ok=True)
        conf = prefix / "nginx.conf"
        conf.write_text(self._config(prefix))
        log = prefix / "error.log"
        self.proc = subprocess.Popen(
            [NGINX, "-e", str(log), "-p", str(prefix), "-c", str(conf)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
        log.touch()
        wait_listening(self.port, self.proc, log, 10)

    def _config(self, prefix: Path) -> str:
        user = pwd.getpwuid(os.getuid()).pw_name
        temp = "\n".join(
            f"  {kind}_temp_path {prefix / 'tmp' / kind};"
            for kind in ("proxy", "fastcgi", "uwsgi", "scgi")
        )
        return f"""
{"user " + user + ";" if os.geteuid() == 0 else ""}
worker_processes {self.workers};
daemon off;
master_process on;
pid {prefix / "nginx.pid"};
error_log {prefix / "error.log"} warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  default_type application/octet-stream;
  client_max_body_size 0;
  client_body_temp_path {prefix / "body"};
{temp}
  server {{
    listen 127.0.0.1:{self.port};
    root {self.www};
    location /up/ {{
      dav_methods PUT DELETE;
      create_full_put_path on;
      dav_access user:rw;
    }}
  }}
}}
"""

    def pids(self) -> list[int]:
        assert self.proc is not None
        return [self.proc.pid]

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGTERM)
                self.proc.wait(10)


class BenchSwift(SwiftAIO):
    """The tests' Swift all-in-one, with ``workers`` processes for proxy and object servers
    (the tests run one process each)."""

    bench_workers = 2

    def _common(self, etc: Path, service: str) -> str:
        common = super()._common(etc, service)
        if service in ("proxy", "object"):
            common = common.replace("workers = 0", f"workers = {self.bench_workers}")
        return common

    def pids(self) -> list[int]:
        return [proc.pid for proc in self.procs]

    def request(self, method: str, path: str, body: bytes | None = None) -> int:
        req = urllib.request.Request(
            f"{self.storage_url}/{path}",
            data=body,
            method=method,
            headers={"X-Auth-Token": self.get_token()},
        )
        with urllib.request.urlopen(req, timeout=30) as response:
            return int(response.status)
