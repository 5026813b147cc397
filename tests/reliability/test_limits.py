"""Limits that protect the service: per-app and per-address rate limits (429 with
Retry-After and rate-limit headers), the body size cap while streaming, the bound on
concurrent url fetches."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from stowage.config import Settings
from stowage.core.ratelimits import MemoryBuckets, RateLimiter
from tests.api.harness import Harness
from tests.reliability.checks import TOTALS, assert_clean, expect_error


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(
        data_dir=tmp_path / "data",
        access_log=False,
        fetch_allow_private=True,
        rate_limit_app=2.0,
        rate_limit_ip=1000.0,
        rate_limit_burst=1.5,  # 3 requests at once, then 2 per second
    )


async def test_per_app_limit_answers_429_with_retry_after(harness: Harness) -> None:
    params = {"key": harness.open_app.api_key}
    answers = [await harness.api.post("/api/store/S3", params=params, data=b"x") for _ in range(4)]
    assert [r.status for r in answers[:3]] == [200, 200, 200]
    assert answers[0].headers["RateLimit-Limit"] == "3"
    assert answers[0].headers["Filestack-Remaining"] == "2"
    refused = answers[3]
    await expect_error(refused, 429, "RATE_LIMITED")
    assert int(refused.headers["Retry-After"]) >= 1
    assert refused.headers["RateLimit-Remaining"] == "0"
    assert {"Filestack-Limit", "Filestack-Reset", "RateLimit-Reset"} <= set(refused.headers)
    assert len([f async for f in harness.service.registry.all_files()]) == 3  # 429 stored nothing
    await assert_clean(harness.service)
    # Another app is not limited by this one's budget; health checks never are.
    other = {"key": harness.secure_app.api_key}
    assert (await harness.api.get("/api/file/" + "A" * 20, params=other)).status == 404
    assert (await harness.api.get("/healthz")).status == 200
    await asyncio.sleep(0.6)  # one token back at 2 per second
    assert (await harness.api.post("/api/store/S3", params=params, data=b"x")).status == 200


async def test_per_address_limit_covers_requests_without_a_key(harness: Harness) -> None:
    harness.settings.rate_limit_ip = 1.0
    harness.settings.rate_limit_burst = 2.0
    statuses = [(await harness.cdn.get("/" + "B" * 20)).status for _ in range(4)]
    TOTALS.inputs_tried += 4
    assert statuses[:2] == [404, 404] and statuses[2:] == [429, 429]


async def test_buckets_refill_and_stay_bounded() -> None:
    buckets = MemoryBuckets(max_buckets=10)
    first = [await buckets.take("k", rate=1.0, burst=2.0, now=100.0) for _ in range(3)]
    assert [d.allowed for d in first] == [True, True, False]
    assert first[2].retry_after == pytest.approx(1.0)
    assert (await buckets.take("k", rate=1.0, burst=2.0, now=101.0)).allowed
    for i in range(50):
        await buckets.take(f"flood{i}", rate=1.0, burst=2.0, now=102.0)
    assert len(buckets._buckets) == 10


async def test_zero_disables_a_limit(tmp_path: Path) -> None:
    limiter = RateLimiter(Settings(data_dir=tmp_path, rate_limit_app=0, rate_limit_ip=0))
    assert await limiter.check("key", "127.0.0.1") is None


async def test_body_over_the_cap_is_413_before_the_disk_fills(harness: Harness) -> None:
    harness.settings.max_upload_bytes = 1024 * 1024
    written: list[int] = []

    async def endless() -> AsyncIterator[bytes]:
        for _ in range(64):
            written.append(1)
            yield b"z" * (256 * 1024)

    resp = await harness.api.post(
        "/api/store/S3", params={"key": harness.open_app.api_key}, data=endless()
    )
    await expect_error(resp, 413, "PAYLOAD_TOO_LARGE")
    tmp = harness.settings.data_dir / "storage" / harness.open_app.api_key / "tmp"
    assert list(tmp.iterdir()) == []
    await assert_clean(harness.service)


async def test_concurrent_url_fetches_are_bounded(harness: Harness) -> None:
    """At most fetch_max_concurrent fetches run at once; the others wait, none fails."""
    harness.settings.rate_limit_app = 0
    harness.service.fetcher = type(harness.service.fetcher)(
        allow_private=True,
        connect_timeout=5,
        read_timeout=5,
        total_timeout=30,
        max_redirects=0,
        max_bytes=1024,
        max_concurrent=2,
    )
    running = 0
    peak = 0

    async def slow(request: web.Request) -> web.Response:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.2)
        running -= 1
        return web.Response(body=b"fetched")

    app = web.Application()
    app.router.add_get("/f", slow)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}/f"
    try:
        answers = await asyncio.gather(
            *(
                harness.api.post(
                    "/api/store/S3", params={"key": harness.open_app.api_key}, data={"url": url}
                )
                for _ in range(6)
            )
        )
    finally:
        await runner.cleanup()
        await harness.service.fetcher.close()
    TOTALS.inputs_tried += 6
    assert [r.status for r in answers] == [200] * 6
    assert peak == 2
