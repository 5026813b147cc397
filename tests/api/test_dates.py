"""Last-Modified is never later than Date (RFC 9110 8.8.2.1), on both origins, for
originals and derivatives, fresh or not; and a client that sends back the Last-Modified
it got (If-Modified-Since) gets a 304."""

from __future__ import annotations

import email.utils
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.api.harness import Harness
from tests.api.test_transform import picture, stored

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")
CHAINS = ["flip", "flop", "negative", "rotate=deg:90", "resize=width:20", "blur=amount:3"]


def seconds(header: str) -> float:
    return email.utils.parsedate_to_datetime(header).timestamp()


def dated(resp: Any) -> tuple[float, float]:
    """Last-Modified and Date of an answer, checked to be in order."""
    modified, date = seconds(resp.headers["Last-Modified"]), seconds(resp.headers["Date"])
    assert modified <= date, (resp.url, resp.headers["Last-Modified"], resp.headers["Date"])
    return modified, date


async def answers(harness: Harness, handle: str, chain: str) -> list[tuple[Any, str, str, Any]]:
    """An original and a derivative, fresh and again, by GET and HEAD, on both origins."""
    client = {"api": harness.api, "cdn": harness.cdn}
    targets = [
        ("api", f"/api/file/{handle}"),
        ("cdn", f"/{handle}"),
        ("cdn", f"/{chain}/{handle}"),
        ("api", f"/process/{chain}/output=format:png/{handle}"),
        ("cdn", f"/{chain}/{handle}"),  # again: now from the derivative cache
    ]
    found = []
    for origin, target in targets:
        for method in ("GET", "HEAD"):
            resp = await client[origin].request(method, target)
            await resp.read()
            assert resp.status == 200, (target, resp.status)
            found.append((client[origin], method, target, resp))
    return found


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(chain=st.sampled_from(CHAINS), width=st.integers(8, 40), data=st.binary(max_size=64))
async def test_last_modified_is_never_after_date(
    harness: Harness, chain: str, width: int, data: bytes
) -> None:
    """Fresh writes: the file's time has a fraction of a second, which rounded up (as
    aiohttp rounds a file's time) was one second after the Date of the same answer."""
    handle = await stored(harness, picture(width, 16, ".png"), name="p.png")
    plain = (await harness.store(data or b"x", filename="a.txt"))["handle"]
    for *_, resp in await answers(harness, handle, chain):
        dated(resp)
    for client, target in ((harness.api, f"/api/file/{plain}"), (harness.cdn, f"/{plain}")):
        resp = await client.get(target)
        await resp.read()
        dated(resp)


async def test_the_last_modified_sent_back_is_a_304(harness: Harness) -> None:
    handle = await stored(harness, picture(32, 16, ".png"), name="p.png")
    for client, method, target, resp in await answers(harness, handle, "flip"):
        since = {"If-Modified-Since": resp.headers["Last-Modified"]}
        again = await client.request(method, target, headers=since)
        assert again.status == 304, (target, method)
        assert await again.read() == b""
        dated(again)
        assert again.headers["Last-Modified"] == resp.headers["Last-Modified"]
        earlier = {"If-Modified-Since": "Thu, 01 Jan 1970 00:00:00 GMT"}
        fresh = await client.request(method, target, headers=earlier)
        await fresh.read()
        assert fresh.status == 200


async def test_if_none_match_wins_over_if_modified_since(harness: Harness) -> None:
    """RFC 9110 13.1.3: with If-None-Match, If-Modified-Since is not read."""
    handle = await stored(harness, b"x" * 10, name="a.txt")
    first = await harness.api.get(f"/api/file/{handle}")
    await first.read()
    headers = {"If-None-Match": '"other"', "If-Modified-Since": first.headers["Last-Modified"]}
    again = await harness.api.get(f"/api/file/{handle}", headers=headers)
    assert again.status == 200
    assert await again.read() == b"x" * 10
