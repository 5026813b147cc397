"""Checklist 26-34 over HTTP with the default guard: every spelling of an internal address is
refused (400/403) on store and overwrite, a canary on 127.0.0.1 sees no request, nothing is
stored. The guard's own rules (DNS pinning, redirects, timeouts, size caps, bombs) are
tested in tests/core/test_fetch.py."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from stowage.config import Settings
from tests.api.harness import Harness
from tests.api.test_file_ops import basic
from tests.reliability.checks import TOTALS, assert_clean, assert_intact, expect_error


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", access_log=False)  # fetch_allow_private off


@pytest.fixture
async def canary() -> AsyncIterator[tuple[int, list[str]]]:
    hits: list[str] = []

    async def record(request: web.Request) -> web.Response:
        hits.append(request.path)
        return web.Response(body=b"internal secret")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", record)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    yield port, hits
    await runner.cleanup()


INTERNAL = [
    "http://127.0.0.1:{port}/a",  # 26
    "http://localhost:{port}/a",
    "http://0.0.0.0:{port}/a",
    "http://[::1]:{port}/a",
    "http://169.254.169.254/latest/meta-data/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://2130706433:{port}/a",  # 27
    "http://0177.0.0.1:{port}/a",
    "http://0x7f.1:{port}/a",
    "http://127.1:{port}/a",
    "http://[::ffff:127.0.0.1]:{port}/a",  # 28
    "http://[::ffff:169.254.169.254]/a",
    "http://[64:ff9b::7f00:1]:{port}/a",
    "http://localhost.:{port}/a",  # 29: names that resolve inward
    "http://LOCALHOST:{port}/a",
    "file:///etc/passwd",  # 31
    "gopher://127.0.0.1:{port}/_x",
    "ftp://127.0.0.1:{port}/a",
    "data:text/plain,hello",
    "redis://127.0.0.1:6379/",
    "http://allowed@127.0.0.1:{port}/a",  # 32
    "http://allowed.com\\@127.0.0.1:{port}/a",
    "http:\\\\127.0.0.1:{port}\\a",
    "http://127.0.0.1%2f@allowed.com/a",
]


@pytest.mark.parametrize("template", INTERNAL, ids=range(len(INTERNAL)))
async def test_internal_urls_are_refused_and_never_reached(
    harness: Harness, canary: tuple[int, list[str]], template: str
) -> None:
    port, hits = canary
    url = template.format(port=port)
    key = {"key": harness.open_app.api_key}
    resp = await harness.api.post("/api/store/S3", params=key, data={"url": url})
    await expect_error(resp, (400, 403))
    previous = await harness.store(b"previous")
    resp = await harness.api.post(
        f"/api/file/{previous['handle']}", data={"url": url}, headers=basic("app", "open-secret")
    )
    await expect_error(resp, (400, 403))
    TOTALS.internal_addresses_reached += len(hits)
    assert hits == []
    path = harness.object_path(harness.open_app, previous["key"])
    assert_intact(path.read_bytes(), b"previous")
    assert len([f async for f in harness.service.registry.all_files()]) == 1
    await assert_clean(harness.service)


async def test_failing_sources_store_nothing(harness: Harness) -> None:
    """34: a source answering 404/500 or not answering at all is a 4xx/5xx, no object.
    (With the guard loosened for loopback: the guard is not what is tested here.)"""
    harness.service.fetcher.allow_private = True

    async def failing(request: web.Request) -> web.Response:
        return web.Response(status=int(request.match_info["status"]))

    app = web.Application()
    app.router.add_get("/{status}", failing)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        for status in (404, 500, 503):
            resp = await harness.api.post(
                "/api/store/S3",
                params={"key": harness.open_app.api_key},
                data={"url": f"http://127.0.0.1:{port}/{status}"},
            )
            await expect_error(resp, (400, 404, 502), "UPSTREAM_ERROR")
    finally:
        await runner.cleanup()
    resp = await harness.api.post(
        "/api/store/S3",
        params={"key": harness.open_app.api_key},
        data={"url": f"http://127.0.0.1:{port}/gone"},
    )
    await expect_error(resp, (502, 504))
    assert [f async for f in harness.service.registry.all_files()] == []
    await assert_clean(harness.service)


async def test_gzip_bomb_is_inflated_only_up_to_the_size_cap(harness: Harness) -> None:
    """33: a source answering `Content-Encoding: gzip` (though `identity` was asked) with
    10 MiB of zeros squeezed into a few KiB: its body is the file the gzip holds, so the
    size cap counts the inflated bytes, which are inflated a piece at a time and refused
    at the cap (413), nothing stored; one within the cap is stored inflated (kept as
    sent, a gzip was stored as the PNG it held)."""
    import gzip

    harness.service.fetcher.allow_private = True
    harness.service.fetcher.max_bytes = 1024 * 1024
    bombs = {"/bomb": b"\0" * (10 * 1024 * 1024), "/small": b"\0" * (100 * 1024)}

    async def serve(request: web.Request) -> web.Response:
        body = gzip.compress(bombs[request.path])
        return web.Response(body=body, headers={"Content-Encoding": "gzip"})

    app = web.Application()
    app.router.add_get("/{name}", serve)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        base = f"http://127.0.0.1:{runner.addresses[0][1]}"
        params = {"key": harness.open_app.api_key}
        refused = await harness.api.post(
            "/api/store/S3", params=params, data={"url": base + "/bomb"}
        )
        kept = await harness.api.post("/api/store/S3", params=params, data={"url": base + "/small"})
    finally:
        await runner.cleanup()
    TOTALS.inputs_tried += 2
    await expect_error(refused, (413,))
    body = await kept.json()
    assert kept.status == 200 and body["size"] == len(bombs["/small"]), body
    files = [f async for f in harness.service.registry.all_files()]
    assert [f.size for f in files] == [len(bombs["/small"])]


async def test_tls_error_at_the_source_stores_nothing(harness: Harness, tmp_path: Path) -> None:
    """34: a source whose certificate does not verify (self-signed) is a 502, no object."""
    import ssl

    from tests.servers.dropbox_fake import make_certificate

    harness.service.fetcher.allow_private = True
    cert, key = make_certificate(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    reached: list[str] = []

    async def file(request: web.Request) -> web.Response:
        reached.append(request.path)
        return web.Response(body=b"should never be stored")

    app = web.Application()
    app.router.add_get("/f.txt", file)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    port = runner.addresses[0][1]
    try:
        resp = await harness.api.post(
            "/api/store/S3",
            params={"key": harness.open_app.api_key},
            data={"url": f"https://127.0.0.1:{port}/f.txt"},
        )
        TOTALS.inputs_tried += 1
        await expect_error(resp, 502, "UPSTREAM_ERROR")
    finally:
        await runner.cleanup()
    assert reached == []  # the handshake failed: no request was ever sent
    assert [f async for f in harness.service.registry.all_files()] == []
    await assert_clean(harness.service)
