"""A background job's URL fetch waits for a fetch slot longer than a client's does
(``fetch_background_slot_wait`` against ``fetch_slot_wait``): with every slot held by
fetches from a slow origin, a video conversion's ``watermark_url`` waited the 5 s a
client waits, then the job failed with FETCH_BUSY. Now it waits for a slot and
completes, while a store from a URL asked meanwhile still gets 503 FETCH_BUSY after its
own wait."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiohttp import web

from tests.api.balanced import through_nginx
from tests.api.harness import Harness
from tests.api.test_video import finished, stored, url
from tests.api.test_video_watermark import black_clip, red_png
from tests.reliability.checks import expect_error
from tests.reliability.test_fetch_slots import store_url, until

pytestmark = pytest.mark.skipif(through_nginx(), reason="the slots are one node's")

HELD = 1.5  # seconds every slot stays held once the job waits: three client waits


@dataclass
class Origin:
    url: str = ""
    dripping: int = 0
    #: when each path was asked, from the test's clock
    asked: dict[str, float] = field(default_factory=dict)
    release: asyncio.Event = field(default_factory=asyncio.Event)  # the drips end


@pytest.fixture
async def origin() -> AsyncIterator[Origin]:
    """``/drip``: a byte every 0.1 s until ``release`` is set (60 s at most);
    ``/mark.png``: a small red image at once; ``/f``: a few bytes at once."""
    found = Origin()
    mark = red_png()

    async def drip(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        found.dripping += 1
        try:
            for _ in range(600):
                await response.write(b"x")
                if found.release.is_set():
                    break
                await asyncio.sleep(0.1)
        finally:
            found.dripping -= 1
        await response.write_eof()
        return response

    async def fast(request: web.Request) -> web.Response:
        found.asked[request.path] = time.monotonic()
        if request.path == "/mark.png":
            return web.Response(body=mark, content_type="image/png")
        return web.Response(body=b"fetched at once")

    app = web.Application()
    app.router.add_get("/drip", drip)
    app.router.add_get("/mark.png", fast)
    app.router.add_get("/f", fast)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    found.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        yield found
    finally:
        await runner.cleanup()


@pytest.mark.settings(
    fetch_max_concurrent=2,
    fetch_app_max_concurrent=2,
    fetch_slot_wait=0.5,
    fetch_background_slot_wait=30.0,
    fetch_min_rate=0,
    video_attempts=1,  # a refused fetch fails the job at once instead of a retry later
)
async def test_a_video_watermark_url_waits_for_a_slot_a_store_still_gets_503(
    harness: Harness, origin: Origin, tmp_path: Path
) -> None:
    harness.settings.rate_limit_app = 0
    app = harness.open_app
    handle = await stored(harness, black_clip(tmp_path / "b.mp4"))
    drip = f"{origin.url}/drip"
    holding = [asyncio.create_task(store_url(harness, app, f"{drip}?h={i}")) for i in range(2)]
    try:
        await until(lambda: origin.dripping == 2)  # every slot is held
        task = f'video_convert=preset:thumbnail,watermark_url:"{origin.url}/mark.png"'
        job = asyncio.create_task(finished(harness, url(harness, task, handle)))
        # the job's fetch waits for a slot (after the job's own probe of its source)
        await until(lambda: harness.parts.fetcher.waiting == 1, 40.0)
        waited_from = time.monotonic()
        # a client's fetch meanwhile: its own wait (0.5 s), then 503
        _, took, resp = await store_url(harness, app, f"{origin.url}/f")
        await expect_error(resp, 503, "FETCH_BUSY")
        assert resp.headers["Retry-After"] == "1"
        assert 0.4 <= took < HELD, took
        assert "/f" not in origin.asked
        await asyncio.sleep(max(0.0, HELD - (time.monotonic() - waited_from)))
        assert not job.done(), job.result()  # still waiting, three client waits on
        released = time.monotonic()
        origin.release.set()
        done = await job
        assert done["status"] == "completed", done
        assert origin.asked["/mark.png"] >= released  # fetched once a slot came free
    finally:
        origin.release.set()
        for waiting in holding:
            waiting.cancel()
        await asyncio.gather(*holding, return_exceptions=True)
