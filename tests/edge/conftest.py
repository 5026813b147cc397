"""Fixtures of tests/edge; the helpers they use are in tier.py."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import pytest

from tests.edge.tier import (
    EDGE_ENV,
    Edge,
    EdgeCluster,
    new_app,
    start_edge_cluster,
)
from tests.multinode.cluster import new_node
from tests.servers.fx_postgres import PostgresServer
from tests.servers.tcplink import Link
from tests.servers.varnish import Varnish


@pytest.fixture(scope="module")
def edge() -> Iterator[Edge]:
    folder = Path(tempfile.mkdtemp(prefix="stowage-edge-"))
    node = new_node("node1", folder, {})
    slow = Link(target_port=node.cdn_port)  # the cache's way to the origin
    cache = Varnish(backend_port=slow.port)
    link = Link(target_port=cache.port)  # the node's way to the cache
    env = {
        **os.environ,
        **EDGE_ENV,
        "STOWAGE_EDGE_CACHE_URLS": link.url,
        "STOWAGE_CDN_PUBLIC_URL": cache.url,
    }
    node.env = env
    running = Edge(node, cache, link, env, slow)
    try:
        running.key, running.secret = new_app(env, folder / "node1")
        running.secured_key, running.secured_secret = new_app(env, folder / "node1", "--security")
        link.up()
        slow.up()
        node.start()
        cache.start()
        yield running
    finally:
        link.down()
        slow.down()
        cache.stop()
        if node.proc is not None:
            node.stop()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module", params=[1, 2], ids=["one-cache", "two-caches"])
def edge_cluster(
    request: pytest.FixtureRequest, postgres_server: PostgresServer
) -> Iterator[EdgeCluster]:
    cluster = start_edge_cluster(postgres_server, request.param)
    try:
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(cluster.folder, ignore_errors=True)


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    """A client session for one test (every edge test talks to real servers)."""
    async with aiohttp.ClientSession() as session:
        yield session
