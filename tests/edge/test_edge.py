"""One node behind Varnish running the shipped VCL: what is cached, what passes, and how
Range, HEAD and If-None-Match behave through the cache."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import aiohttp
import pytest

from tests.edge.helpers import get, overwrite, policy_query, remove, store
from tests.edge.tier import Edge, origin_gets

INTERNAL = ("xkey", "X-Edge-TTL", "Via", "X-Varnish")


async def test_a_hit_is_served_without_reaching_the_origin(
    edge: Edge, http: aiohttp.ClientSession
) -> None:
    handle = await store(http, edge.api, edge.key, b"hello edge")
    for _ in range(5):
        status, body, headers = await get(http, f"{edge.cache.url}/{handle}")
        assert (status, body) == (200, b"hello edge")
        assert not [h for h in INTERNAL if h in headers]
        assert headers["Cache-Control"] == "public, no-cache"  # browsers revalidate
    assert origin_gets([edge.node], handle) == 1


async def test_the_origin_tags_cdn_responses_only(edge: Edge, http: aiohttp.ClientSession) -> None:
    handle = await store(http, edge.api, edge.key, b"tagged")
    _, _, direct = await get(http, f"http://127.0.0.1:{edge.node.cdn_port}/{handle}")
    assert direct["xkey"] == f"{handle} app:{edge.key}"
    assert direct["X-Edge-TTL"] == "86400"
    piped = f"http://127.0.0.1:{edge.node.cdn_port}/{handle}"
    _, _, piped_headers = await get(http, piped, headers={"X-Edge-Piped": "1"})
    assert "xkey" not in piped_headers and "X-Edge-TTL" not in piped_headers
    _, _, api = await get(http, f"{edge.api}/file/{handle}")
    assert "xkey" not in api and api["Cache-Control"] == "private, no-cache"


async def test_overwrite_and_delete_are_seen_at_once(
    edge: Edge, http: aiohttp.ClientSession
) -> None:
    handle = await store(http, edge.api, edge.key, b"one")
    url = f"{edge.cache.url}/{handle}"
    assert (await get(http, url))[1] == b"one"
    await overwrite(http, edge.api, handle, edge.secret, b"two")
    assert (await get(http, url))[1] == b"two"
    assert (await get(http, url))[1] == b"two"
    await remove(http, edge.api, handle, edge.secret, "delete")
    assert (await get(http, url))[0] == 404


async def test_range_head_and_if_none_match_through_the_cache(
    edge: Edge, http: aiohttp.ClientSession
) -> None:
    handle = await store(http, edge.api, edge.key, b"0123456789")
    url = f"{edge.cache.url}/{handle}"
    for _ in range(2):  # a miss (the range asked of the origin), then on the stored copy
        status, body, headers = await get(http, url, headers={"Range": "bytes=2-5"})
        assert (status, body) == (206, b"2345")
        assert headers["Content-Range"] == "bytes 2-5/10"
        if (await get(http, url))[0] != 200:  # fills the cache for the second round
            pytest.fail("a plain GET failed")
    async with http.head(url) as resp:
        assert resp.status == 200 and resp.headers["Content-Length"] == "10"
        assert await resp.read() == b""
    status, _, headers = await get(http, url)
    etag = headers["ETag"]
    before = origin_gets([edge.node], handle)
    status, body, _ = await get(http, url, headers={"If-None-Match": etag})
    assert (status, body) == (304, b"")
    assert origin_gets([edge.node], handle) == before  # answered by the cache


async def test_cache_false_and_credentials_pass_to_the_origin(
    edge: Edge, http: aiohttp.ClientSession
) -> None:
    handle = await store(http, edge.api, edge.key, b"passing")
    for path in (f"cache=false/{handle}", f"{handle}?cache=false"):
        for _ in range(2):
            status, body, headers = await get(http, f"{edge.cache.url}/{path}")
            assert (status, body) == (200, b"passing")
            assert headers["Cache-Control"] == "no-store"
    assert origin_gets([edge.node], handle) == 4


async def test_expiry_task_keeps_its_max_age(edge: Edge, http: aiohttp.ClientSession) -> None:
    handle = await store(http, edge.api, edge.key, b"expiring")
    url = f"{edge.cache.url}/cache=expiry:600/{handle}"
    for _ in range(2):
        status, _, headers = await get(http, url)
        assert status == 200 and headers["Cache-Control"] == "public, max-age=600"
    assert origin_gets([edge.node], handle) == 1
    await overwrite(http, edge.api, handle, edge.secret, b"expired")
    assert (await get(http, url))[1] == b"expired"


async def test_a_secured_app_file_is_never_served_from_the_cache(
    edge: Edge, http: aiohttp.ClientSession
) -> None:
    handle = await store(http, edge.api, edge.secured_key, b"classified-42", edge.secured_secret)
    read = policy_query(edge.secured_secret, "read")
    secured = f"{edge.cache.url}/security=p:{read['policy']},s:{read['signature']}/{handle}"
    for _ in range(3):
        status, body, headers = await get(http, secured)
        assert (status, body) == (200, b"classified-42")
        assert headers["Cache-Control"] == "private, no-cache"
        for url in (f"{edge.cache.url}/{handle}", f"{edge.cache.url}/{handle}?x=1"):
            status, body, _ = await get(http, url)
            assert status in (401, 403) and b"classified-42" not in body
    status, body, _ = await get(http, f"{edge.cache.url}/{handle}", params=read)
    assert (status, body) == (200, b"classified-42")
    assert origin_gets([edge.node], handle) == 10  # every one went to the origin


async def test_turning_security_on_purges_the_apps_cached_files(
    edge: Edge, http: aiohttp.ClientSession
) -> None:
    from tests.edge.tier import new_app

    key, _ = new_app(edge.env, edge.node.data_dir)
    handle = await store(http, edge.api, key, b"was public")
    url = f"{edge.cache.url}/{handle}"
    assert (await get(http, url))[1] == b"was public"
    assert (await get(http, url))[1] == b"was public"
    assert origin_gets([edge.node], handle) == 1
    edge.cli("apps", "update", key, "--security")
    await asyncio.sleep(0.1)  # the node's app cache, if any, is not what is tested here
    status, body, _ = await get(http, url)
    assert status in (401, 403) and body != b"was public"


async def test_deleting_an_app_purges_its_cached_files(
    edge: Edge, http: aiohttp.ClientSession
) -> None:
    """``stowage apps delete`` goes through the change path: the app's files, cached
    before, are no longer served by the cache once the command returns."""
    from tests.edge.tier import new_app

    key, _ = new_app(edge.env, edge.node.data_dir)
    handles = [await store(http, edge.api, key, f"app file {n}".encode()) for n in range(2)]
    for n, handle in enumerate(handles):
        for _ in range(2):
            assert (await get(http, f"{edge.cache.url}/{handle}"))[1] == f"app file {n}".encode()
    assert origin_gets([edge.node], handles[0]) == 1  # the second read was a hit
    edge.cli("apps", "delete", key, "--yes")
    for n, handle in enumerate(handles):
        status, body, _ = await get(http, f"{edge.cache.url}/{handle}")
        assert status >= 400 and f"app file {n}".encode() not in body
    assert origin_gets([edge.node], handles[0]) == 2  # asked of the origin again


async def test_a_cache_that_is_down_during_a_write_gets_its_purge_later(
    edge: Edge, http: aiohttp.ClientSession
) -> None:
    handle = await store(http, edge.api, edge.key, b"before")
    url = f"{edge.cache.url}/{handle}"
    assert (await get(http, url))[1] == b"before"
    for mode, n in ((edge.link.down, 1), (edge.link.hang, 2)):
        mode()
        started = time.monotonic()
        await overwrite(http, edge.api, handle, edge.secret, f"after {n}".encode())
        assert time.monotonic() - started < 2.0  # purge timeout 0.25 s: the write answers
        assert (await get(http, url))[1] != f"after {n}".encode()  # not purged yet
        edge.link.up()
        deadline = time.monotonic() + 10
        while (await get(http, url))[1] != f"after {n}".encode():
            assert time.monotonic() < deadline, "the queued purge never reached the cache"
            await asyncio.sleep(0.1)
    log = edge.node.log.read_text()
    assert "did not acknowledge the purge of" in log and "queued for retry" in log
    assert "acknowledged the queued purge of" in log
    async with http.get(f"{edge.node.api}/metrics") as resp:
        text = await resp.text()
    assert 'stowage_edge_purges_total{result="queued"}' in text
    assert 'stowage_edge_purges_total{result="retried"}' in text


async def test_a_large_file_streams_through_without_being_stored(
    edge: Edge, http: aiohttp.ClientSession
) -> None:
    size = 256 * 1024**2
    chunk = bytes(range(256)) * 4096  # 1 MiB

    async def body() -> AsyncIterator[bytes]:
        for _ in range(size // len(chunk)):
            yield chunk

    handle = await store(http, edge.api, edge.key, body())  # type: ignore[arg-type]
    rss_before = edge.cache.reset_peak()
    seen = 0
    for _ in range(2):
        received = 0
        async with http.get(f"{edge.cache.url}/{handle}") as resp:
            assert resp.status == 200 and resp.headers["Content-Length"] == str(size)
            assert not [h for h in INTERNAL if h in resp.headers]
            async for piece in resp.content.iter_chunked(1024**2):
                received += len(piece)
                await asyncio.sleep(0.002)  # a client slower than the origin
        assert received == size
        assert origin_gets([edge.node], handle) > seen  # not stored: each went to the origin
        seen = origin_gets([edge.node], handle)
    assert edge.cache.peak_bytes() - rss_before < 32 * 1024**2  # never held in the cache
    status, body_part, _ = await get(
        http, f"{edge.cache.url}/{handle}", headers={"Range": "bytes=1048576-1048579"}
    )
    assert (status, body_part) == (206, bytes([0, 1, 2, 3]))


async def test_a_read_racing_a_write_is_purged_by_the_echo(
    edge: Edge, http: aiohttp.ClientSession
) -> None:
    """A read reaches the origin before the overwrite commits; its answer reaches the cache
    after the write's purge (a slow origin): the cache stores the old file. The purge sent
    again 2 s after the write removes it."""
    handle = await store(http, edge.api, edge.key, b"old")
    url = f"{edge.cache.url}/{handle}"
    edge.slow.delay = 0.6
    try:
        racing = asyncio.create_task(get(http, url))
        await asyncio.sleep(0.2)  # the origin has answered; the answer is on its way
        await overwrite(http, edge.api, handle, edge.secret, b"new")
        assert (await racing)[1] == b"old"
    finally:
        edge.slow.delay = 0.0
    written = time.monotonic()
    assert (await get(http, url))[1] == b"old"  # stored after the write's purge
    while (await get(http, url))[1] != b"new":
        assert time.monotonic() - written < 4, "the echo purge did not remove the old file"
        await asyncio.sleep(0.1)
