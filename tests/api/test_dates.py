"""Last-Modified is never later than Date (RFC 9110 8.8.2.1), on both origins, for
originals and derivatives, fresh or not; and a client that sends back the Last-Modified
it got (If-Modified-Since) gets a 304."""

from __future__ import annotations

import asyncio
import base64
import email.utils
import math
import time
from typing import Any

import pytest
from aiohttp.test_utils import make_mocked_request
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from stowage.core.reading import LOCAL_CLOCK
from stowage.http import dates
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


async def _next_second() -> None:
    """Past the second of the writes just made: their Last-Modified then names them."""
    await asyncio.sleep(1.05 - time.time() % 1)


async def test_the_last_modified_sent_back_is_a_304(harness: Harness) -> None:
    handle = await stored(harness, picture(32, 16, ".png"), name="p.png")
    await answers(harness, handle, "flip")  # the derivatives made, then a second passes
    await _next_second()
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


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(delay=st.floats(0.0, 0.9))
async def test_a_version_written_after_a_read_is_never_a_304(
    harness: Harness, delay: float
) -> None:
    """Written within the same second as the read or later, the new version is sent: its
    time rounds up past any Last-Modified an earlier answer carried."""
    handle = (await harness.store(b"old", filename="a.txt"))["handle"]
    first = await harness.api.get(f"/api/file/{handle}")
    assert await first.read() == b"old"
    await asyncio.sleep(delay)
    auth = {"Authorization": "Basic " + base64.b64encode(b"app:open-secret").decode()}
    key = {"key": harness.open_app.api_key}
    put = await harness.api.post(f"/api/file/{handle}", params=key, data=b"new", headers=auth)
    assert put.status == 200, await put.text()
    since = {"If-Modified-Since": first.headers["Last-Modified"]}
    for client, target in ((harness.api, f"/api/file/{handle}"), (harness.cdn, f"/{handle}")):
        again = await client.get(target, headers=since)
        assert (again.status, await again.read()) == (200, b"new"), target


@given(since=st.integers(0, 2**31), modified=st.floats(1, 2**31, allow_nan=False))
def test_if_modified_since_never_holds_for_a_later_or_unknown_time(
    since: int, modified: float
) -> None:
    """A store that gives no time (Dropbox, GCS: 0) never answers 304 by date, no
    version is unmodified since a date before its time rounded up, and a date later than
    now is ignored (RFC 7232 3.3: invalid; Varnish ignores it too)."""
    assume(abs(since - time.time()) > 5)  # not the second the clock is in
    header = {"If-Modified-Since": email.utils.formatdate(since, usegmt=True)}
    request = make_mocked_request("GET", "/", headers=header)
    assert not dates.not_modified_since(request, 0)
    holds = math.ceil(modified) <= since <= time.time()
    assert dates.not_modified_since(request, modified) == holds


@given(
    read=st.floats(1e9, 2e9, allow_nan=False),
    age=st.floats(0, 5, allow_nan=False),
    after=st.floats(0, 0.5, allow_nan=False),
    lag=st.floats(0, 1, allow_nan=False),
)
def test_a_version_stamped_by_the_coarse_clock_after_a_read_is_never_unmodified(
    read: float, age: float, after: float, lag: float
) -> None:
    """The kernel stamps a file from its coarse clock, up to a tick behind the clock the
    answer's Last-Modified is held to: a version written just after a read, stamped a
    tick earlier, rounded up to the very second sent with the old one (a flaky 304 of
    test_a_version_written_after_a_read_is_never_a_304, seen once under load)."""
    written = read + after
    tick = (LOCAL_CLOCK.slack or 0.0) / 2  # the coarse clock's resolution
    stamped = written - lag * tick  # at most one tick behind
    sent = dates.sent_second(read - age, now=read)
    header = {"If-Modified-Since": email.utils.formatdate(sent, usegmt=True)}
    request = make_mocked_request("GET", "/", headers=header)
    assert not dates.not_modified_since(request, stamped)
