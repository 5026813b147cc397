"""Three real ``stowage serve`` nodes on one PostgreSQL and one S3 server, behind nginx.

PostgreSQL comes from ``tests/servers/fx_postgres.py``, S3 from moto
(``tests/servers/fx_s3.py``), nginx from Debian (``scripts/setup.d/80-postgres.sh``).
nginx runs ``deploy/nginx/stowage.conf``, the file the deployment guide shows, with its
loopback addresses rewritten to the ports picked here.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from tests.servers.fx_postgres import PostgresServer
from tests.servers.fx_s3 import S3Endpoint, make_bucket
from tests.servers.ports import free_port, wait_listening
from tests.servers.procs import run_checked
from tests.servers.stowage_serve import StowageServe

ROOT = Path(__file__).resolve().parents[2]


NGINX_CONF = ROOT / "deploy" / "nginx" / "stowage.conf"


BUCKET = "stowage-multinode"


#: Short, so that the crash test sees an abandoned store removed within seconds; not
#: shorter: a live 32 MiB store on a loaded CI machine took over 3 s, and a store older
#: than the grace is abandoned by the other nodes' janitors (409 CONFLICT to its client).
PENDING_GRACE = 8.0


def new_node(name: str, folder: Path, env: dict[str, str]) -> StowageServe:
    """One node of the cluster: its data under ``folder/name``, its log ``folder/name.log``."""
    return StowageServe(folder / name, env=env, log=folder / f"{name}.log", stop_timeout=30)


class Upstream(Protocol):
    """What nginx needs of a node: its API and CDN ports."""

    @property
    def port(self) -> int: ...

    @property
    def cdn_port(self) -> int: ...


def nginx_folder(folder: Path | None = None) -> Path:
    """A folder nginx's unprivileged workers can use (a new temporary one by default)."""
    folder = folder or Path(tempfile.mkdtemp(prefix="stowage-nginx-"))
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o755)
    (folder / "tmp").mkdir(exist_ok=True)
    (folder / "tmp").chmod(0o777)
    return folder


@dataclass
class Nginx:
    folder: Path
    api_port: int = field(default_factory=free_port)
    cdn_port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def api(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    @property
    def cdn(self) -> str:
        return f"http://127.0.0.1:{self.cdn_port}"

    def start(self, nodes: Sequence[Upstream]) -> None:
        """deploy/nginx/stowage.conf in front of ``nodes`` (three entries)."""
        ports = {8080: self.api_port, 8081: self.cdn_port}
        for i, node in enumerate(nodes, start=1):
            ports[8080 + 100 * i] = node.port
            ports[8081 + 100 * i] = node.cdn_port
        self.run(render(NGINX_CONF.read_text(), ports))

    def run(self, conf: str) -> None:
        """nginx with ``conf`` as its http-level file; waits for both listening ports."""
        (self.folder / "stowage.conf").write_text(conf)
        (self.folder / "nginx.conf").write_text(_main_conf(self.folder))
        log = self.folder / "error.log"
        self.proc = subprocess.Popen(
            ["/usr/sbin/nginx", "-p", str(self.folder), "-c", str(self.folder / "nginx.conf")],
            stdout=log.open("ab"),
            stderr=subprocess.STDOUT,
        )
        wait_listening(self.api_port, self.proc, log, 15, "nginx")
        wait_listening(self.cdn_port, self.proc, log, 15, "nginx")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)  # graceful: finish requests, then exit
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def render(conf: str, ports: dict[int, int]) -> str:
    """The committed config with each 127.0.0.1:<port> replaced by the test's port."""

    def swap(match: re.Match[str]) -> str:
        port = int(match[1])
        if port not in ports:
            raise AssertionError(f"deploy/nginx/stowage.conf has an unexpected address :{port}")
        return f"127.0.0.1:{ports[port]}"

    return re.sub(r"127\.0\.0\.1:(\d+)", swap, conf)


def _main_conf(folder: Path) -> str:
    return f"""
daemon off;
worker_processes 2;
pid {folder}/nginx.pid;
error_log {folder}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    client_body_temp_path {folder}/tmp/body;
    proxy_temp_path {folder}/tmp/proxy;
    fastcgi_temp_path {folder}/tmp/fastcgi;
    uwsgi_temp_path {folder}/tmp/uwsgi;
    scgi_temp_path {folder}/tmp/scgi;
    include {folder}/stowage.conf;
}}
"""


@dataclass
class Cluster:
    nodes: list[StowageServe]
    lb: Nginx
    dsn: str
    s3: S3Endpoint
    key: str
    secret: str
    env: dict[str, str]

    def cli(self, *args: str) -> str:
        argv = [sys.executable, "-m", "stowage", "--data-dir", str(self.lb.folder), *args]
        return run_checked(argv, "the stowage command", env=self.env).stdout

    def stop(self) -> None:
        self.lb.stop()
        for node in self.nodes:
            if node.proc is not None and node.proc.poll() is None:
                node.stop()


def start_cluster(postgres: PostgresServer, moto: S3Endpoint) -> Cluster:
    folder = nginx_folder()
    s3 = S3Endpoint(moto.url, moto.access_key, moto.secret_key, BUCKET)
    make_bucket(s3)
    dsn = postgres.new_database()
    lb = Nginx(folder)
    env = {
        **os.environ,
        "STOWAGE_REGISTRY_URL": dsn,
        "STOWAGE_DEFAULT_STORAGE": json.dumps(s3.config()),
        "STOWAGE_API_PUBLIC_URL": f"{lb.api}/api",
        "STOWAGE_CDN_PUBLIC_URL": lb.cdn,
        "STOWAGE_PENDING_GRACE_SECONDS": str(PENDING_GRACE),
        "STOWAGE_FETCH_ALLOW_PRIVATE": "true",
        "STOWAGE_SHUTDOWN_TIMEOUT": "30",
        "STOWAGE_WEBHOOK_ALLOW_PRIVATE": "true",  # the test's receiver is on 127.0.0.1
        "STOWAGE_WEBHOOK_POLL_INTERVAL": "0.3",  # every node polls the queue often
    }
    nodes = [new_node(f"node{i}", folder, env) for i in range(1, 4)]
    cluster = Cluster(nodes, lb, dsn, s3, "", "", env)
    cluster.cli("db", "upgrade")
    created: dict[str, Any] = json.loads(cluster.cli("apps", "create", "--json"))
    cluster.key, cluster.secret = created["api_key"], created["secret"]
    try:
        for node in nodes:
            node.start()
        lb.start(nodes)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def keep_for_diagnosis(folder: Path, name: str) -> str:
    """A test on this cluster failed: copies its nodes' and nginx's logs to test-output/
    and returns where, with the end of each log."""
    kept = ROOT / "test-output" / "multinode" / f"{Path(name).stem}-{time.strftime('%H%M%S')}"
    kept.mkdir(parents=True, exist_ok=True)
    report = [f"\na test on the cluster failed; its logs are kept in {kept}"]
    for log in sorted(folder.glob("*.log")):
        shutil.copy2(log, kept / log.name)
        tail = log.read_text(errors="replace").splitlines()[-30:]
        report += [f"--- end of {log.name}", *tail]
    return "\n".join(report)
