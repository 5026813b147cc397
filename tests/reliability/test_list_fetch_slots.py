"""A list of URLs (``/<APIKEY>/zip/[u1,u2..]``) never fails for busy fetch slots where
reading its URLs one after the other would have read them (generated lists, seeds
5302-5303). Its app's slots held by fetches that drip until the test lets them end, a
slot freed within ``fetch_slot_wait`` is enough: the list is read through it, in order.
Each of the list's readers once waited its own ``fetch_slot_wait`` from the list's
start: the second URL's wait ran out while the first was read through the one freed
slot, and the list answered 503 ``FETCH_BUSY``. With no slot freed, the list is still
503 ``FETCH_BUSY`` with ``Retry-After`` after the wait, its URLs never fetched."""

from __future__ import annotations

import asyncio
import io
import random
import time
import zipfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from aiohttp import web

from tests.api.balanced import through_nginx
from tests.api.harness import Harness
from tests.api.sites import served_routes
from tests.reliability.checks import expect_error
from tests.reliability.test_fetch_slots import store_url, until

pytestmark = pytest.mark.skipif(through_nginx(), reason="the slots are one node's")

SLOTS = 4  # the app's: a list reads 2 at once
WAIT = 0.8  # fetch_slot_wait
SLOTS_HELD = pytest.mark.settings(
    fetch_max_concurrent=16,
    fetch_app_max_concurrent=SLOTS,
    fetch_slot_wait=WAIT,
    fetch_min_rate=0,
    rate_limit_app=0,
)


@dataclass
class Origin:
    """``/hold/<n>``: a byte every 0.05 s until ``let_go[n]`` is set; ``/wait/<ms>/<n>``:
    ``body(n)`` after ``ms``. ``asked``: every list URL's path, as the origin saw it."""

    url: str = ""
    holding: int = 0
    let_go: dict[str, asyncio.Event] = field(default_factory=dict)
    asked: list[str] = field(default_factory=list)

    @staticmethod
    def body(name: str) -> bytes:
        return f"file {name} ".encode() * 3


@pytest.fixture
async def origin() -> AsyncIterator[Origin]:
    found = Origin()

    async def hold(request: web.Request) -> web.StreamResponse:
        done = found.let_go.setdefault(request.match_info["n"], asyncio.Event())
        response = web.StreamResponse()
        await response.prepare(request)
        found.holding += 1
        try:
            while not done.is_set():
                await response.write(b"x")
                await asyncio.sleep(0.05)
        finally:
            found.holding -= 1
        await response.write_eof()
        return response

    async def wait(request: web.Request) -> web.Response:
        found.asked.append(request.path)
        await asyncio.sleep(int(request.match_info["ms"]) / 1000)
        return web.Response(body=found.body(request.match_info["n"]))

    async with served_routes({"/hold/{n}": hold, "/wait/{ms}/{n}": wait}) as found.url:
        try:
            yield found
        finally:  # the held answers end before their server closes
            for event in found.let_go.values():
                event.set()


def generated(rnd: random.Random, case: int) -> tuple[list[int], list[float]]:
    """The list's fetch times (ms; each past what the wait leaves once the first slot is
    freed, so that the first URL still holds it when a second reader's wait ran out),
    and when each freed slot is let go (s, within the wait)."""
    durations = [rnd.randint(900, 1100) for _ in range(rnd.randint(2, 4))]
    freed = sorted(rnd.uniform(0.1, 0.3) for _ in range(1 if case % 3 else 2))
    return durations, freed


async def _held_slots(harness: Harness, origin: Origin, tag: str) -> list[asyncio.Task[object]]:
    """The app's every slot taken by a store of a dripping URL."""
    holding: list[asyncio.Task[object]] = []
    for i in range(SLOTS):
        url = f"{origin.url}/hold/{tag}-{i}"
        holding.append(asyncio.create_task(store_url(harness, harness.open_app, url)))
    await until(lambda: origin.holding == SLOTS)
    return holding


async def _let_go(origin: Origin, tag: str, freed: list[float]) -> None:
    started = time.monotonic()
    for i, at in enumerate(freed):
        await asyncio.sleep(max(0.0, at - (time.monotonic() - started)))
        origin.let_go[f"{tag}-{i}"].set()


@SLOTS_HELD
async def test_a_list_is_read_through_slots_freed_within_the_wait(
    harness: Harness, origin: Origin
) -> None:
    rnd = random.Random(5302)
    key = harness.open_app.api_key
    for case in range(4):
        durations, freed = generated(rnd, case)
        tag = f"c{case}"
        holding = await _held_slots(harness, origin, tag)
        try:
            urls = [f"{origin.url}/wait/{ms}/{tag}-{i}" for i, ms in enumerate(durations)]
            if rnd.random() < 0.5:
                urls.insert(rnd.randint(0, len(urls)), rnd.choice(urls))  # a repeat
            letting = asyncio.create_task(_let_go(origin, tag, freed))
            resp = await harness.cdn.get(f"/{key}/zip/[{','.join(urls)}]")
            body = await resp.read()
            await letting
            assert resp.status == 200, (body[:300], durations, freed)
            with zipfile.ZipFile(io.BytesIO(body)) as archive:
                got = [archive.read(info) for info in archive.infolist()]
            assert got == [origin.body(url.rsplit("/", 1)[1]) for url in urls], urls
        finally:
            for event in origin.let_go.values():
                event.set()
            await asyncio.gather(*holding, return_exceptions=True)


@SLOTS_HELD
async def test_a_list_with_no_slot_freed_is_busy_after_the_wait(
    harness: Harness, origin: Origin
) -> None:
    rnd = random.Random(5303)
    key = harness.open_app.api_key
    holding = await _held_slots(harness, origin, "busy")
    try:
        for _ in range(3):
            count = rnd.randint(1, 5)
            urls = [f"{origin.url}/wait/10/busy-{rnd.randrange(99)}" for _ in range(count)]
            started = time.monotonic()
            resp = await harness.cdn.get(f"/{key}/zip/[{','.join(urls)}]")
            took = time.monotonic() - started
            await expect_error(resp, 503, "FETCH_BUSY")
            assert resp.headers["Retry-After"] == "1"
            assert WAIT - 0.1 < took < WAIT + 2.0, took
        assert origin.asked == []
    finally:
        for event in origin.let_go.values():
            event.set()
        await asyncio.gather(*holding, return_exceptions=True)
