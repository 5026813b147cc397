"""``edge_bypass_url``: a file too large to be stored, asked through the edge cache, is
answered ``307`` to the origin's own address; the origin asked directly serves it.
Real node, real Varnish running the shipped VCL."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest

from tests.edge.helpers import get, store
from tests.edge.tier import EDGE_ENV, new_app, origin_gets
from tests.multinode.cluster import new_node
from tests.servers.stowage_serve import StowageServe
from tests.servers.varnish import Varnish

LARGE = int(EDGE_ENV["STOWAGE_EDGE_MAX_OBJECT_BYTES"]) + 1


@dataclass
class Bypass:
    node: StowageServe
    cache: Varnish
    origin: str  # the node's CDN address: edge_bypass_url
    key: str
    secured_key: str
    secured_secret: str


@pytest.fixture(scope="module")
def bypass() -> Iterator[Bypass]:
    folder = Path(tempfile.mkdtemp(prefix="stowage-bypass-"))
    node = new_node("node1", folder, {})
    cache = Varnish(backend_port=node.cdn_port)
    origin = f"http://127.0.0.1:{node.cdn_port}"
    node.env = {
        **os.environ,
        **EDGE_ENV,
        "STOWAGE_EDGE_CACHE_URLS": cache.url,
        "STOWAGE_CDN_PUBLIC_URL": cache.url,
        "STOWAGE_EDGE_BYPASS_URL": origin + "/",
    }
    try:
        key, _ = new_app(node.env, folder / "node1")
        secured_key, secured_secret = new_app(node.env, folder / "node1", "--security")
        node.start()
        cache.start()
        yield Bypass(node, cache, origin, key, secured_key, secured_secret)
    finally:
        cache.stop()
        if node.proc is not None:
            node.stop()
        shutil.rmtree(folder, ignore_errors=True)


def _body(size: int) -> bytes:
    return (bytes(range(256)) * (size // 256 + 1))[:size]


async def test_a_large_file_is_sent_around_the_cache(
    bypass: Bypass, http: aiohttp.ClientSession
) -> None:
    content = _body(LARGE)
    handle = await store(http, f"{bypass.node.api}/api", bypass.key, content)
    query = "?cache=true&dl=false"
    status, body, headers = await get(
        http, f"{bypass.cache.url}/{handle}{query}", allow_redirects=False
    )
    assert status == 307 and body == b""
    assert headers["Location"] == f"{bypass.origin}/{handle}{query}"
    assert headers["Cache-Control"] == "no-store"
    assert "xkey" not in headers and "X-Edge-TTL" not in headers
    before = origin_gets([bypass.node], handle)
    status, body, _ = await get(http, f"{bypass.cache.url}/{handle}{query}")  # followed
    assert (status, body) == (200, content)
    # The origin asked directly serves the file: one request for the 307, one for the bytes.
    assert origin_gets([bypass.node], handle) == before + 2
    status, part, _ = await get(
        http, f"{bypass.cache.url}/{handle}", headers={"Range": "bytes=10-13"}
    )
    assert (status, part) == (206, content[10:14])


async def test_the_origin_asked_directly_serves_the_bytes(
    bypass: Bypass, http: aiohttp.ClientSession
) -> None:
    content = _body(LARGE)
    handle = await store(http, f"{bypass.node.api}/api", bypass.key, content)
    status, body, _ = await get(http, f"{bypass.origin}/{handle}", allow_redirects=False)
    assert (status, body) == (200, content)  # no X-Edge-Via: never sent round in a loop


async def test_small_files_are_still_cached_and_secured_files_still_checked(
    bypass: Bypass, http: aiohttp.ClientSession
) -> None:
    small = await store(http, f"{bypass.node.api}/api", bypass.key, b"small")
    for _ in range(2):
        assert (await get(http, f"{bypass.cache.url}/{small}", allow_redirects=False))[:2] == (
            200,
            b"small",
        )
    assert origin_gets([bypass.node], small) == 1  # the second was a hit
    secured = await store(
        http, f"{bypass.node.api}/api", bypass.secured_key, _body(LARGE), bypass.secured_secret
    )
    status, _, _ = await get(http, f"{bypass.cache.url}/{secured}", allow_redirects=False)
    assert status in (401, 403)  # refused before any redirect
