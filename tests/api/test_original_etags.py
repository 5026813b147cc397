"""A stored file's ETag names its content (not the store's mtime and size), for reads
and for conditional overwrites alike."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.api.harness import Harness
from tests.api.test_file_ops import basic, handle_of

AUTH = basic("app", "open-secret")


def _same_mtime(harness: Harness, *keys: str) -> None:
    """Both objects as if written in the same tick: one mtime, to the nanosecond."""
    stamp = 1_700_000_000_000_000_000
    for key in keys:
        os.utime(harness.object_path(harness.open_app, key), ns=(stamp, stamp))


async def _tag(harness: Harness, handle: str) -> str:
    resp = await harness.cdn.get(f"/{handle}")
    assert resp.status == 200
    await resp.read()
    return resp.headers["ETag"]


async def test_equal_size_files_of_one_instant_have_their_own_etags(harness: Harness) -> None:
    first, second = await harness.store(b"aaaa"), await harness.store(b"bbbb")
    _same_mtime(harness, first["key"], second["key"])
    one, two = await _tag(harness, handle_of(first)), await _tag(harness, handle_of(second))
    assert one != two
    head = await harness.api.head(f"/api/file/{handle_of(first)}")
    assert head.headers["ETag"] == one  # the API and the CDN name it alike
    same = await harness.cdn.get(f"/{handle_of(first)}", headers={"If-None-Match": one})
    assert same.status == 304
    other = await harness.cdn.get(f"/{handle_of(second)}", headers={"If-None-Match": one})
    assert other.status == 200 and await other.read() == b"bbbb"


@given(st.binary(min_size=1, max_size=64), st.binary(min_size=1, max_size=64))
@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
async def test_conditionals_follow_the_content_across_overwrites(
    harness: Harness, before: bytes, after: bytes
) -> None:
    after = after if after != before else before + b"!"
    stored = await harness.store(before)
    handle = handle_of(stored)
    seen = await _tag(harness, handle)
    resp = await harness.api.post(
        f"/api/file/{handle}", data=after, headers={**AUTH, "If-Match": seen}
    )
    assert resp.status == 200, await resp.text()
    _same_mtime(harness, stored["key"])
    current = await _tag(harness, handle)
    assert current != seen
    stale = await harness.cdn.get(f"/{handle}", headers={"If-None-Match": seen})
    assert stale.status == 200 and await stale.read() == after
    fresh = await harness.cdn.get(f"/{handle}", headers={"If-None-Match": current})
    assert fresh.status == 304
    refused = await harness.api.post(
        f"/api/file/{handle}", data=b"late", headers={**AUTH, "If-Match": seen}
    )
    assert refused.status == 412
    read_stale = await harness.cdn.get(f"/{handle}", headers={"If-Match": seen})
    assert read_stale.status == 412
    ok = await harness.api.post(
        f"/api/file/{handle}", data=b"late", headers={**AUTH, "If-Match": current}
    )
    assert ok.status == 200
