"""Real ``stowage serve`` nodes behind real Varnish running ``deploy/varnish/stowage.vcl``.

``edge``: one node (SQLite) whose only cache admin URL goes through a ``Link`` the test
can cut, so "the cache is down during a write" is the network, not a lost cache.
``edge_cluster``: two nodes on one PostgreSQL registry and one shared storage folder,
behind ``deploy/nginx/stowage.conf``, with one or two caches in front of nginx, as
docs/deployment.md sets them up.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.multinode.cluster import NGINX_CONF, Nginx, new_node, nginx_folder, render
from tests.servers.fx_postgres import PostgresServer
from tests.servers.procs import run_checked
from tests.servers.stowage_serve import StowageServe
from tests.servers.tcplink import Link
from tests.servers.varnish import Varnish

EDGE_ENV = {
    "STOWAGE_EDGE_MAX_OBJECT_BYTES": str(16 * 1024**2),
    "STOWAGE_EDGE_PURGE_RETRY_DELAY": "0.2",
    "STOWAGE_FETCH_ALLOW_PRIVATE": "true",
    "STOWAGE_SHUTDOWN_TIMEOUT": "5",
}


def cli(env: dict[str, str], data_dir: Path, *args: str) -> Any:
    argv = [sys.executable, "-m", "stowage", "--data-dir", str(data_dir), *args]
    return run_checked(argv, "the stowage command", env=env).stdout


def new_app(env: dict[str, str], data_dir: Path, *flags: str) -> tuple[str, str]:
    created = json.loads(cli(env, data_dir, "apps", "create", "--json", *flags))
    return created["api_key"], created["secret"]


def origin_gets(nodes: list[StowageServe], handle: str) -> int:
    """Requests for ``handle`` that reached a node's CDN origin (its access log)."""
    time.sleep(0.2)  # the access log line is written just after the response is sent
    pattern = re.compile(rf" (GET|HEAD) /[^ ]*{re.escape(handle)}[^ ]* \d{{3}} ")
    return sum(len(pattern.findall(n.log.read_text(errors="replace"))) for n in nodes)


@dataclass
class Edge:
    node: StowageServe
    cache: Varnish
    link: Link
    env: dict[str, str]
    slow: Link
    key: str = ""
    secret: str = ""
    secured_key: str = ""
    secured_secret: str = ""

    @property
    def api(self) -> str:
        return f"{self.node.api}/api"

    def cli(self, *args: str) -> Any:
        return cli(self.env, self.node.data_dir, *args)


@dataclass
class EdgeCluster:
    nodes: list[StowageServe]
    lb: Nginx
    caches: list[Varnish]
    env: dict[str, str]
    key: str = ""
    secret: str = ""
    folder: Path = field(default_factory=Path)

    def stop(self) -> None:
        for cache in self.caches:
            cache.stop()
        self.lb.stop()
        for node in self.nodes:
            if node.proc is not None:
                node.stop()


def start_edge_cluster(postgres: PostgresServer, n_caches: int) -> EdgeCluster:
    folder = nginx_folder()
    lb = Nginx(folder)
    caches = [Varnish(backend_port=lb.cdn_port) for _ in range(n_caches)]
    storage = {"type": "local", "root": str(folder / "shared-storage")}
    env = {
        **os.environ,
        **EDGE_ENV,
        "STOWAGE_REGISTRY_URL": postgres.new_database(),
        "STOWAGE_DEFAULT_STORAGE": json.dumps(storage),
        "STOWAGE_EDGE_CACHE_URLS": ",".join(c.url for c in caches),
        "STOWAGE_CDN_PUBLIC_URL": caches[0].url,
    }
    nodes = [new_node(f"node{i}", folder, env) for i in (1, 2)]
    cluster = EdgeCluster(nodes, lb, caches, env, folder=folder)
    cli(env, folder, "db", "upgrade")
    cluster.key, cluster.secret = new_app(env, folder)
    try:
        for node in nodes:
            node.start()
        # deploy/nginx/stowage.conf names three nodes: the third slot is node 1 again.
        ports = {8080: lb.api_port, 8081: lb.cdn_port}
        for slot, node in enumerate([*nodes, nodes[0]], start=1):
            ports[8080 + 100 * slot] = node.port
            ports[8081 + 100 * slot] = node.cdn_port
        lb.run(render(NGINX_CONF.read_text(), ports))
        for cache in caches:
            cache.start()
    except BaseException:
        cluster.stop()
        raise
    return cluster
