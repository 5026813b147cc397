"""The API suite through a load balancer: three nodes behind nginx, on PostgreSQL.

With ``STOWAGE_TEST_THROUGH_NGINX=1`` the ``harness`` fixture of ``tests/api`` starts,
for each test, three Stowage nodes (each its own service, registry connection pool and
listeners) on one PostgreSQL database, emptied before each test, and one shared data
folder (the local-disk provider on a shared filesystem, as docs/deployment.md
describes), and nginx in front of them running ``deploy/nginx/stowage.conf``.
``harness.api`` and ``harness.cdn`` then talk only to nginx, which spreads the requests
of one test over the three nodes, so every test of the suite also checks that no request
depends on the node that served an earlier one. ``tests/multinode/test_api_suite.py``
runs the suite this way.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
from aiohttp import web
from aiohttp.test_utils import BaseTestServer, TestClient, TestServer
from yarl import URL

from stowage.assembly import Assembly, assemble
from stowage.config import Settings
from stowage.http.app import api_app, cdn_app
from stowage.http.protocol import JsonAppRunner
from stowage.registry import upgrade_registry
from tests.multinode.cluster import Nginx, nginx_folder
from tests.servers.fx_postgres import PostgresServer

NODES = 3


def through_nginx() -> bool:
    return os.environ.get("STOWAGE_TEST_THROUGH_NGINX") == "1"


def _record_served(nodes: list[_Node]) -> None:
    """Appends the requests each node served in this test to the file named by
    ``STOWAGE_TEST_SERVED_LOG``: the proof that nginx spread the suite over the nodes."""
    log = os.environ.get("STOWAGE_TEST_SERVED_LOG")
    if log:
        served = [n.api.handler.requests_count + n.cdn.handler.requests_count for n in nodes]
        with open(log, "a") as out:
            out.write(json.dumps(served) + "\n")


class Balancer(BaseTestServer):
    """Stands in for a TestServer: the balancer's address, with nothing to run here."""

    def __init__(self, port: int) -> None:
        super().__init__(host="127.0.0.1", port=port)

    async def start_server(self, loop: Any = None, **kwargs: Any) -> None:
        self._root = URL(f"http://127.0.0.1:{self.port}")

    async def _make_runner(self, **kwargs: Any) -> web.BaseRunner:
        raise NotImplementedError("the balancer is nginx, not an aiohttp runner")

    async def close(self) -> None:
        self._closed = True


@dataclasses.dataclass
class _Node:
    parts: Assembly
    api: TestServer
    cdn: TestServer

    @property
    def port(self) -> int:
        assert self.api.port is not None
        return self.api.port

    @property
    def cdn_port(self) -> int:
        assert self.cdn.port is not None
        return self.cdn.port


# What the harness gets from its nodes: (a node's assembly, API client, CDN client,
# settings, a client of that node's own API port: /metrics is never proxied).
Nodes = tuple[Assembly, TestClient[Any, Any], TestClient[Any, Any], Settings, TestClient[Any, Any]]


class _Served(TestServer):
    """A listener that answers what aiohttp's parser refuses as a served node does (JSON,
    ``protocol.JsonAppRunner``), not in aiohttp's plain text: a raw control byte in a
    request line is the same ``MALFORMED_REQUEST`` here as through nginx."""

    async def _make_runner(self, **kwargs: Any) -> web.BaseRunner:
        return JsonAppRunner(self.app, **kwargs)


async def start_node(settings: Settings) -> _Node:
    """One node in this process: its assembly, and its API and CDN listeners."""
    parts = assemble(settings)
    await parts.start()
    api, cdn = _Served(api_app(parts)), _Served(cdn_app(parts))
    await api.start_server()
    await cdn.start_server()
    return _Node(parts, api, cdn)


#: The registry database of this process's tests, per PostgreSQL server (migrated once),
#: and the statements that empty it.
_REGISTRIES: dict[int, tuple[str, str]] = {}


async def _empty_registry(settings: Settings, postgres: PostgresServer) -> str:
    """A registry with the current schema and no rows. One database emptied before each
    test, not a new one each: CREATE DATABASE and the migrations took half a second a
    test (288 tests). DELETE, not TRUNCATE: on tables of a few rows it took 4 ms where
    TRUNCATE took 17 (a new file per table); the sequences restart as RESTART IDENTITY
    would, and the foreign keys' triggers are off while the rows go (the superuser's
    ``session_replication_role``), so the order of the tables does not matter."""
    known = _REGISTRIES.get(postgres.port)
    if known is None:
        dsn = postgres.new_database()
        await upgrade_registry(dataclasses.replace(settings, registry_url=dsn))
        _REGISTRIES[postgres.port] = (dsn, await _emptying(dsn))
        return dsn
    dsn, emptying = known
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(emptying)
    finally:
        await conn.close()
    return dsn


async def _emptying(dsn: str) -> str:
    conn = await asyncpg.connect(dsn)
    try:
        tables = await conn.fetch(
            "SELECT quote_ident(tablename) AS name FROM pg_tables"
            " WHERE schemaname = 'public' AND tablename <> 'stowage_schema'"
        )
        sequences = await conn.fetch(
            "SELECT quote_ident(sequencename) AS name FROM pg_sequences WHERE schemaname = 'public'"
        )
    finally:
        await conn.close()
    return "; ".join(
        [
            "SET session_replication_role = replica",
            *(f"DELETE FROM {row['name']}" for row in tables),
            *(f"ALTER SEQUENCE {row['name']} RESTART" for row in sequences),
            "SET session_replication_role = DEFAULT",
        ]
    )


@asynccontextmanager
async def balanced_nodes(settings: Settings, postgres: PostgresServer) -> AsyncIterator[Nodes]:
    """Three nodes on an emptied database behind nginx: (first node's assembly, API client,
    CDN client, the nodes' settings)."""
    settings = dataclasses.replace(settings, registry_url=await _empty_registry(settings, postgres))
    nodes: list[_Node] = []
    lb = Nginx(nginx_folder())
    api: TestClient[Any, Any] | None = None
    cdn: TestClient[Any, Any] | None = None
    direct: TestClient[Any, Any] | None = None
    try:
        for _ in range(NODES):
            nodes.append(await start_node(settings))
        lb.start(nodes)
        api, cdn = TestClient(Balancer(lb.api_port)), TestClient(Balancer(lb.cdn_port))
        direct = TestClient(Balancer(nodes[0].port))
        for client in (api, cdn, direct):
            await client.start_server()
        yield nodes[0].parts, api, cdn, settings, direct
        _record_served(nodes)
    finally:
        for client in (api, cdn, direct):
            if client is not None:
                await client.close()
        lb.stop()
        for node in nodes:
            await node.api.close()
            await node.cdn.close()
            await node.parts.close()
        shutil.rmtree(lb.folder, ignore_errors=True)
