"""The purge client (``edge/wire.py``) against real Varnish running the shipped VCL,
reached through a ``Link`` that counts connections and can drop or hang them."""

from __future__ import annotations

import asyncio
import http.server
import threading
import time
from collections.abc import Iterator

import pytest

from stowage.edge.wire import CacheLink
from tests.servers.ports import free_port
from tests.servers.tcplink import Link
from tests.servers.varnish import Varnish


@pytest.fixture(scope="module")
def cache() -> Iterator[Varnish]:
    running = Varnish(backend_port=free_port())  # purges never reach the origin
    running.start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def link(cache: Varnish) -> Iterator[Link]:
    made = Link(target_port=cache.port)
    made.up()
    try:
        yield made
    finally:
        made.down()


async def test_purges_share_one_kept_alive_connection(link: Link) -> None:
    purger = CacheLink(link.url)
    try:
        for n in range(50):
            assert await purger.purge([f"handle{n}", "app:k"], 1.0) is None
    finally:
        await purger.close()
    assert link.accepted == 1


async def test_warm_opens_the_connection_before_the_first_purge(link: Link) -> None:
    purger = CacheLink(link.url)
    try:
        purger.warm()
        deadline = time.monotonic() + 5
        while link.accepted == 0:
            assert time.monotonic() < deadline
            await _pause()
        assert await purger.purge(["h"], 1.0) is None
    finally:
        await purger.close()
    assert link.accepted == 1


async def test_a_connection_the_cache_closed_is_replaced(link: Link) -> None:
    purger = CacheLink(link.url)
    try:
        assert await purger.purge(["h1"], 1.0) is None
        link.up()
        link._drop()  # as Varnish does after timeout_idle
        await _pause()
        assert await purger.purge(["h2"], 1.0) is None
        link._drop()
        assert await purger.purge(["h3"], 1.0) is None  # not yet seen closed when taken
    finally:
        await purger.close()
    assert link.accepted == 3


async def test_a_cache_that_does_not_answer_is_reported_after_the_timeout(link: Link) -> None:
    link.hang()
    purger = CacheLink(link.url)
    try:
        started = time.monotonic()
        assert await purger.purge(["h"], 0.2) == "no answer within 0.2 s"
        assert time.monotonic() - started < 1.0
    finally:
        await purger.close()


async def test_a_cache_that_is_down_is_reported(link: Link) -> None:
    link.down()
    purger = CacheLink(link.url)
    try:
        why = await purger.purge(["h"], 1.0)
        assert why is not None and why.startswith("could not reach the cache")
    finally:
        await purger.close()


async def test_a_refused_purge_is_reported_with_its_status() -> None:
    # Not a cache: the standard library's HTTP server answers 501 and closes.
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    purger = CacheLink(f"http://127.0.0.1:{server.server_port}")
    try:
        for _ in range(2):  # the closed connection is not reused
            assert await purger.purge(["h"], 1.0) == "the cache answered 501"
    finally:
        await purger.close()
        server.shutdown()
        server.server_close()


def test_only_http_urls() -> None:
    with pytest.raises(ValueError, match="not an http"):
        CacheLink("ftp://127.0.0.1:21")


async def _pause() -> None:
    await asyncio.sleep(0.05)
