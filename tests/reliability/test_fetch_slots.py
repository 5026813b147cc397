"""URL fetch slots against a real loopback origin that drips its body: one app holds at
most its share of them, so another app's fetch starts at once; a fetch that finds no
slot free waits ``fetch_slot_wait`` at most, then is answered 503 FETCH_BUSY (JSON,
Retry-After); a body that drips under ``fetch_min_rate`` is cut (504) rather than
holding its slot for ``fetch_total_timeout``."""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import pytest
from aiohttp import ClientResponse, web

from stowage import errors
from stowage.core.fetchslots import FetchSlots
from stowage.registry.base import App
from tests.api.balanced import through_nginx
from tests.api.harness import Harness
from tests.reliability.checks import expect_error

pytestmark = pytest.mark.skipif(through_nginx(), reason="the slots are one node's")

OTHER_APP = App(api_key="otherappkey000000001", secret="other-secret", name="other")
THIRD_APP = App(api_key="thirdappkey000000001", secret="third-secret", name="third")


@dataclass
class Origin:
    url: str
    dripping: int = 0
    hits: list[str] = field(default_factory=list)


@pytest.fixture
async def origin() -> AsyncIterator[Origin]:
    """``/drip?n=N&every=S``: N bytes, one every S seconds; ``/f``: a small file at once."""
    found = Origin("")

    async def drip(request: web.Request) -> web.StreamResponse:
        found.hits.append(request.path_qs)
        response = web.StreamResponse()
        await response.prepare(request)
        found.dripping += 1
        try:
            for _ in range(int(request.query.get("n", "60"))):
                await response.write(b"x")
                await asyncio.sleep(float(request.query.get("every", "0.2")))
        finally:
            found.dripping -= 1
        await response.write_eof()
        return response

    async def fast(request: web.Request) -> web.Response:
        found.hits.append(request.path_qs)
        return web.Response(body=b"fetched at once")

    app = web.Application()
    app.router.add_get("/drip", drip)
    app.router.add_get("/f", fast)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    found.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        yield found
    finally:
        await runner.cleanup()


async def store_url(harness: Harness, app: App, url: str) -> tuple[int, float, ClientResponse]:
    started = time.monotonic()
    resp = await harness.api.post("/api/store/S3", params={"key": app.api_key}, data={"url": url})
    await resp.read()
    return resp.status, time.monotonic() - started, resp


async def until(check: Callable[[], bool], seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "the origin never saw the fetches"
        await asyncio.sleep(0.02)


@pytest.mark.settings(
    fetch_max_concurrent=4, fetch_app_max_concurrent=2, fetch_slot_wait=1.0, fetch_min_rate=0
)
async def test_one_app_holds_its_share_and_a_wait_past_the_bound_is_503(
    harness: Harness, origin: Origin
) -> None:
    harness.settings.rate_limit_app = 0
    for app in (OTHER_APP, THIRD_APP):
        await harness.parts.registry.create_app(app)
    drip = f"{origin.url}/drip?n=40&every=0.2"  # 8 s a fetch
    first = harness.open_app
    holding = [asyncio.create_task(store_url(harness, first, f"{drip}&a={i}")) for i in range(2)]
    try:
        await until(lambda: origin.dripping == 2)
        # the first app holds its share (2 of 4): its third fetch waits, 1 s at most
        _, took, resp = await store_url(harness, first, f"{origin.url}/f?a=3")
        body = await expect_error(resp, 503, "FETCH_BUSY")
        assert resp.headers["Retry-After"] == "1", body
        assert resp.headers["Content-Type"].startswith("application/json")
        assert 0.9 <= took < 3.0, took
        # another app's fetch gets a slot at once, a URL transformation too
        status, took, _ = await store_url(harness, OTHER_APP, f"{origin.url}/f?b=1")
        assert (status, took < 1.0) == (200, True), took
        started = time.monotonic()
        as_is = await harness.cdn.get(f"/{OTHER_APP.api_key}/{origin.url}/f?b=2")
        assert as_is.status == 200 and await as_is.read() == b"fetched at once"
        assert time.monotonic() - started < 1.0
        # every slot taken (two apps, two each): a third app waits 1 s, then 503
        holding += [
            asyncio.create_task(store_url(harness, OTHER_APP, f"{drip}&b={i}")) for i in (3, 4)
        ]
        await until(lambda: origin.dripping == 4)
        _, took, resp = await store_url(harness, THIRD_APP, f"{origin.url}/f?c=1")
        await expect_error(resp, 503, "FETCH_BUSY")
        assert resp.headers["Retry-After"] == "1"
        assert 0.9 <= took < 3.0, took
        assert "/f?a=3" not in origin.hits and "/f?c=1" not in origin.hits
    finally:
        for task in holding:
            task.cancel()
        await asyncio.gather(*holding, return_exceptions=True)


@pytest.mark.settings(
    fetch_max_concurrent=4, fetch_app_max_concurrent=2, fetch_slot_wait=0.5, fetch_min_rate=0
)
async def test_a_list_of_urls_waits_for_its_apps_slots_as_one_url_does(
    harness: Harness, origin: Origin
) -> None:
    """The app's two slots held by two dripping fetches: a list's fetches (read several at
    once elsewhere) wait ``fetch_slot_wait`` for one, then 503 ``FETCH_BUSY``, as one
    URL's fetch does, and the origin never sees them; another app's list is read."""
    await harness.parts.registry.create_app(OTHER_APP)
    drip = f"{origin.url}/drip?n=40&every=0.2"
    first = harness.open_app
    holding = [asyncio.create_task(store_url(harness, first, f"{drip}&a={i}")) for i in range(2)]
    try:
        await until(lambda: origin.dripping == 2)
        listed = ",".join(f"{origin.url}/f?list={i}" for i in range(3))
        started = time.monotonic()
        resp = await harness.cdn.get(f"/{first.api_key}/zip/[{listed}]")
        await expect_error(resp, 503, "FETCH_BUSY")
        assert resp.headers["Retry-After"] == "1"
        assert 0.4 < time.monotonic() - started < 2.5
        assert not [hit for hit in origin.hits if "list=" in hit]
        resp = await harness.cdn.get(f"/{OTHER_APP.api_key}/zip/[{listed}]")
        assert resp.status == 200, await resp.text()
        assert len([hit for hit in origin.hits if "list=" in hit]) == 3
    finally:
        for task in holding:
            task.cancel()
        await asyncio.gather(*holding, return_exceptions=True)


@pytest.mark.settings(fetch_read_timeout=1.0, fetch_min_rate=64)
async def test_a_dripping_body_is_cut_by_the_minimum_rate(harness: Harness, origin: Origin) -> None:
    """A byte every 0.2 s never trips the idle bound (1 s); under 64 bytes a second over
    a second, it is cut within a few seconds, not after its 12 s (or 900 s)."""
    _, took, resp = await store_url(harness, harness.open_app, f"{origin.url}/drip?n=60")
    await expect_error(resp, 504, "UPSTREAM_TIMEOUT")
    assert took < 4.0, took
    await until(lambda: origin.dripping == 0)


@pytest.mark.parametrize("seed", range(4))
async def test_slots_never_exceed_their_bounds_and_a_refusal_comes_after_the_wait(
    seed: int,
) -> None:
    """Random owners taking slots for random times: never more than ``total`` held, never
    more than ``per_owner`` by one owner; a fetch refused waited the bound first (and
    not much longer), with Retry-After; every slot is free at the end."""
    rng = random.Random(seed)
    total, wait = rng.randint(1, 6), 0.15
    slots = FetchSlots(total, rng.randint(1, total), wait)
    held: Counter[str | None] = Counter()
    refused: list[float] = []

    async def one(owner: str | None) -> None:
        await asyncio.sleep(rng.uniform(0, 0.3))
        started = time.monotonic()
        try:
            release = await slots.acquire(owner)
        except errors.FetchBusy as busy:
            refused.append(time.monotonic() - started)
            assert busy.headers["Retry-After"] == "1" and busy.status == 503
            return
        held[owner] += 1
        assert sum(held.values()) <= total and held[owner] <= slots.per_owner
        await asyncio.sleep(rng.uniform(0.01, 0.25))
        held[owner] -= 1
        release()
        release()  # a second call frees nothing more

    owners = ["a", "b", "c", None]
    await asyncio.gather(*(one(rng.choice(owners)) for _ in range(40)))
    assert refused and all(wait * 0.9 <= took < wait + 0.5 for took in refused), refused
    assert slots.used == 0
