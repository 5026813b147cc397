"""URL screenshots kept as derivatives for ``screenshot_cache_seconds`` (issue 26): the
test site counts the pages it serves (one per drawing) and changes colour each time, so
a kept drawing shows the first colour and a new one the next."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from stowage.processing.cache import DerivativeCache
from stowage.processing.shotcache import FOLDER, KeptScreenshots
from stowage.storage import build_provider
from tests.api.balanced import start_node
from tests.api.harness import Harness
from tests.api.test_screenshots import colour_at
from tests.api.test_transform import get
from tests.api.test_transform_rules import code_of

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.needs("chromium", by="scripts/setup.d/90-browser.sh"),
]
COLOURS = ("#f00", "#0f0", "#00f", "#ff0")
RGB = ([255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 0])
SHOT = "urlscreenshot=width:64,height:48,mode:window,delay:0"


@pytest.fixture
async def site() -> AsyncIterator[tuple[str, list[str]]]:
    """A page whose colour changes with every request; the list holds one entry a page."""
    served: list[str] = []

    async def page(request: web.Request) -> web.Response:
        colour = COLOURS[len(served) % len(COLOURS)]
        served.append(colour)
        html = f"<!doctype html><body style='margin:0;background:{colour}'></body>"
        return web.Response(text=html, content_type="text/html")

    async def nothing(request: web.Request) -> web.Response:
        return web.Response(status=404)

    app = web.Application()
    app.router.add_get("/", page)
    app.router.add_get("/favicon.ico", nothing)
    runner = web.AppRunner(app)
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    port = tcp._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}/", served
    await runner.cleanup()


async def test_a_screenshot_is_drawn_once_and_kept(
    harness: Harness, site: tuple[str, list[str]]
) -> None:
    url, served = site
    key = harness.open_app.api_key
    first, body = await get(harness, f"/{key}/{SHOT}/{url}")
    again, body_again = await get(harness, f"/{key}/{SHOT}/{url}")
    assert len(served) == 1 and body_again == body and colour_at(body, 5, 5) == RGB[0]
    assert first.headers["Content-Type"] == again.headers["Content-Type"] == "image/png"
    assert first.headers["ETag"] == again.headers["ETag"]
    scope, max_age = again.headers["Cache-Control"].split(", max-age=")
    assert scope == "public" and 3590 <= int(max_age) <= 3600
    same = await harness.cdn.get(
        f"/{key}/{SHOT}/{url}", headers={"If-None-Match": first.headers["ETag"]}
    )
    assert same.status == 304 and len(served) == 1
    # Other options are another drawing; a chain after the screenshot sets the type.
    resized, _ = await get(harness, f"/{key}/{SHOT}/resize=width:32/output=format:jpg/{url}")
    assert resized.headers["Content-Type"] == "image/jpeg" and len(served) == 2


async def test_cache_false_draws_anew_and_replaces_the_kept_one(
    harness: Harness, site: tuple[str, list[str]]
) -> None:
    url, served = site
    key = harness.open_app.api_key
    kept, _ = await get(harness, f"/{key}/{SHOT}/{url}")
    anew, body = await get(harness, f"/{key}/cache=false/{SHOT}/{url}")
    assert len(served) == 2 and colour_at(body, 5, 5) == RGB[1]
    assert anew.headers["Cache-Control"] == "no-store"
    after, body = await get(harness, f"/{key}/{SHOT}/{url}")
    assert len(served) == 2 and colour_at(body, 5, 5) == RGB[1]
    assert after.headers["ETag"] != kept.headers["ETag"]


@pytest.mark.settings(screenshot_cache_seconds=1)
async def test_an_expired_screenshot_is_drawn_again(
    harness: Harness, site: tuple[str, list[str]]
) -> None:
    url, served = site
    key = harness.open_app.api_key
    kept, _ = await get(harness, f"/{key}/{SHOT}/{url}")
    await asyncio.sleep(1.2)
    again, body = await get(harness, f"/{key}/{SHOT}/{url}")
    assert len(served) == 2 and colour_at(body, 5, 5) == RGB[1]
    assert again.headers["ETag"] != kept.headers["ETag"]


@pytest.mark.settings(screenshot_cache_seconds=0)
async def test_with_no_lifetime_every_request_draws(
    harness: Harness, site: tuple[str, list[str]]
) -> None:
    url, served = site
    key = harness.open_app.api_key
    for _ in range(2):
        await get(harness, f"/{key}/{SHOT}/{url}")
    assert len(served) == 2


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "2130706433", "0x7f.1"])
async def test_a_kept_drawing_of_an_internal_page_is_refused_once_the_guard_refuses_it(
    harness: Harness, site: tuple[str, list[str]], host: str
) -> None:
    """Drawn and kept while private addresses are allowed; a node of the same data with
    them refused checks the page's address before it looks at the kept drawing, for an
    open app and for one whose policy's ``url`` rule allows the page."""
    url, served = site
    url = url.replace("127.0.0.1", host)
    key = harness.open_app.api_key
    kept, _ = await get(harness, f"/{key}/{SHOT}/{url}")
    assert len(served) == 1 and kept.headers["Content-Type"] == "image/png"
    guarded = await start_node(dataclasses.replace(harness.settings, fetch_allow_private=False))
    cdn = TestClient(guarded.cdn)
    secure = harness.secure_app
    allowed = harness.policy(secure, call=["convert"], url=".*")
    try:
        for api_key, params in ((key, {}), (secure.api_key, allowed)):
            resp = await cdn.get(f"/{api_key}/{SHOT}/{url}", params=params)
            assert resp.status == 403 and await code_of(resp) == "URL_FORBIDDEN", resp.status
        assert len(served) == 1
    finally:
        await cdn.close()
        await guarded.parts.close()


async def test_expired_drawings_are_swept(tmp_path: Path) -> None:
    provider = build_provider({"type": "local", "root": str(tmp_path / "d")}, tmp_path)
    cache = DerivativeCache(provider)
    kept = KeptScreenshots(cache, 60)
    source = tmp_path / "shot.png"
    for name in ("old", "young"):
        source.write_bytes(b"png")  # a local cache takes the file itself
        await cache.put(f"{FOLDER}{name}.png", source, "image/png")
    old = cache.local_path(f"{FOLDER}old.png")
    assert old is not None
    os.utime(old, (time.time() - 121, time.time() - 121))  # beyond twice the lifetime
    await kept._sweep()
    assert await cache.stat(f"{FOLDER}old.png") is None
    assert await cache.stat(f"{FOLDER}young.png") is not None
