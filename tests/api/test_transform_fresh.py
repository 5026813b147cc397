"""cache=false renders anew on every request: each one counts against the app's rate
limit, also when the URL does not name the app (a CDN URL without ``?key=``)."""

from __future__ import annotations

import pytest

from tests.api.harness import Harness
from tests.api.test_transform import get, stored


async def code_of(resp: object) -> str:
    return str((await resp.json())["error"]["code"])  # type: ignore[attr-defined]


# A bucket of 3 requests, refilled one per 1000 s: the store below takes one.
@pytest.mark.settings(rate_limit_app=0.001, rate_limit_burst=3000, rate_limit_ip=0)
async def test_cache_false_counts_against_the_app_without_its_key(harness: Harness) -> None:
    handle = await stored(harness)
    for _ in range(5):  # a cached derivative costs the app nothing
        await get(harness, f"/resize=width:50/{handle}")
    for _ in range(2):
        await get(harness, f"/cache=false/resize=width:50/{handle}")
    refused = await harness.cdn.get(f"/cache=false/resize=width:50/{handle}")
    assert refused.status == 429 and await code_of(refused) == "RATE_LIMITED"
    assert int(refused.headers["Retry-After"]) >= 1
    await get(harness, f"/resize=width:50/{handle}")  # the cached one still answers


@pytest.mark.settings(rate_limit_app=0.001, rate_limit_burst=4000, rate_limit_ip=0)
async def test_cache_false_with_the_key_is_charged_once(harness: Harness) -> None:
    handle = await stored(harness)
    params = {"key": harness.open_app.api_key}
    for _ in range(3):
        await get(harness, f"/cache=false/flip/{handle}", params=params)
    refused = await harness.cdn.get(f"/cache=false/flip/{handle}", params=params)
    assert refused.status == 429
