"""Derivatives kept in a shared default store (a bucket every node reads), for every
provider: the source read through the provider, the derivative written and served back
from it (ranges and conditionals on a streamed body), and old versions removed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from stowage import errors
from stowage.processing import cache as cache_module
from stowage.processing import cacheprune
from stowage.processing.cache import PREFIX
from stowage.storage.base import Lists, LocalFiles, WriteOptions
from tests.api.harness import Harness
from tests.api.shared_store import settings, shared  # noqa: F401 - the fixtures
from tests.api.test_file_ops import basic
from tests.api.test_transform import decoded, get, picture, stored


async def derivatives(harness: Harness, handle: str | None = None) -> list[str] | None:
    """The store's derivatives (of ``handle`` only, when given: the store is shared by the
    session's tests, which leave theirs, e.g. the metadata tests run on every provider)."""
    cache = harness.parts.processor.cache
    if not isinstance(cache.provider, Lists):
        return None
    found = [k async for k in cache.provider.keys(cache.container, PREFIX + "/")]
    return [k for k in found if handle is None or f"/{handle}/" in k]


async def test_derivatives_in_the_default_store(harness: Harness, provider_name: str) -> None:
    cache = harness.parts.processor.cache
    if provider_name != "local":
        assert not isinstance(cache.provider, LocalFiles) or provider_name == "dropbox"
    handle = await stored(harness, picture(400, 300))
    first, body = await get(harness, f"/resize=width:100/{handle}")
    second, again = await get(harness, f"/resize=width:100/{handle}")
    assert body == again and decoded(body).width == 100
    assert first.headers["ETag"] == second.headers["ETag"]
    part = await harness.cdn.get(f"/resize=width:100/{handle}", headers={"Range": "bytes=2-11"})
    assert part.status == 206 and await part.read() == body[2:12]
    etag = {"If-None-Match": first.headers["ETag"]}
    assert (await harness.cdn.get(f"/resize=width:100/{handle}", headers=etag)).status == 304
    head = await harness.cdn.head(f"/resize=width:100/{handle}")
    assert head.status == 200 and int(head.headers["Content-Length"]) == len(body)

    kept = await derivatives(harness, handle)
    assert kept is None or len(kept) == 1
    key = {"key": harness.open_app.api_key}
    headers = basic("app", harness.open_app.secret)
    resp = await harness.api.post(
        f"/api/file/{handle}", data=picture(200, 300), headers=headers, params=key
    )
    assert resp.status == 200, await resp.text()
    _, body = await get(harness, f"/resize=width:100/{handle}")
    assert decoded(body).height == 150
    if kept is not None:
        for _ in range(100):
            now = await derivatives(harness, handle)
            if now is not None and not set(kept) & set(now):
                break
            await asyncio.sleep(0.05)
        assert not set(kept) & set(await derivatives(harness, handle) or [])


async def test_prune_removes_what_no_request_reaches(harness: Harness) -> None:
    """Leftovers of every kind in the provider's store: another rendering, the layout
    before, another version, a handle gone. Kept: the current derivative and a kept
    screenshot (they expire on their own). The store is the server's, shared by the
    session's tests: their derivatives are leftovers here too (not this registry's)."""
    cache = harness.parts.processor.cache
    handle = await stored(harness, picture(400, 300))
    _, body = await get(harness, f"/resize=width:100/{handle}")
    if not isinstance(cache.provider, Lists):
        with pytest.raises(errors.NotSupported):
            await cacheprune.prune(cache, harness.service.registry.get, print)
        return
    app = harness.open_app.api_key
    (current,) = [k for k in await derivatives(harness) or [] if f"/{handle}/" in k]
    folder, _, name = current.rpartition("/")
    version, sha, _, digest = name.split("-")
    left = [
        f"{folder}/{version}-{sha}-r1-{digest}",
        f"{folder}/{version}-{sha}/{digest}",
        f"{folder}/v0-{sha}-r{cache_module.RENDERING}-{digest}",
        f"{PREFIX}/{app}/NoSuchHandle00000000/{name}",
    ]
    screenshot = f"{PREFIX}/_screenshots/{app}.png"
    for key in [*left, screenshot]:
        await cache.provider.write(cache.container, key, _chunks(b"left"), WriteOptions())
    before = set(await derivatives(harness) or [])
    lines: list[str] = []

    counted = await cacheprune.prune(cache, harness.service.registry.get, lines.append, False, 2)
    shots = {k for k in before if "/_screenshots/" in k}
    assert counted.checked == len(before - shots) >= 5
    assert counted.unreachable == counted.checked - 1  # all but the current one
    assert [line.split(" derivatives checked, ")[0] for line in lines] == [
        str(n) for n in range(2, counted.checked + 1, 2)
    ]
    assert set(await derivatives(harness) or []) == before
    removed = await cacheprune.prune(cache, harness.service.registry.get, lines.append)
    assert (removed.checked, removed.unreachable) == (counted.checked, counted.unreachable)
    assert set(await derivatives(harness) or []) == {current} | shots
    _, again = await get(harness, f"/resize=width:100/{handle}")
    assert again == body


async def _chunks(data: bytes) -> AsyncIterator[bytes]:
    yield data
