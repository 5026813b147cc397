"""A derivative's ETag names its content: derivatives of one size made at the same
moment do not share a tag, and If-None-Match with one never answers 304 for another."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.api.harness import Harness
from tests.api.test_transform import get, picture, stored

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")
CHAINS = ["flip", "flop", "negative", "rotate=deg:180"]


def same_mtime(folder: Path) -> int:
    """Every derivative file gets one modification time, as results made at once do."""
    files = [p for p in folder.rglob("*.tiff") if p.is_file()]
    for path in files:
        os.utime(path, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    return len(files)


async def test_derivatives_of_one_size_made_at_once_have_their_own_tags(
    harness: Harness,
) -> None:
    handle = await stored(harness, picture(64, 48, ".png"), name="p.png")
    urls = [f"/{chain}/output=format:tiff/{handle}" for chain in CHAINS]
    sizes = set()
    for url in urls:  # uncompressed TIFF: every result has the same byte size
        resp, body = await get(harness, url)
        sizes.add(len(body))
    assert len(sizes) == 1
    assert same_mtime(harness.settings.data_dir) == len(CHAINS)
    tags = {}
    for url in urls:
        resp, _ = await get(harness, url)
        tags[url] = resp.headers["ETag"]
    assert len(set(tags.values())) == len(CHAINS)
    for url in urls:
        for other, tag in tags.items():
            resp = await harness.cdn.get(url, headers={"If-None-Match": tag})
            await resp.read()
            assert resp.status == (304 if other == url else 200), (url, other)
            if resp.status == 304:
                assert resp.headers["ETag"] == tag
    first = urls[0]  # a tag is stable: the next request names the same one
    resp, _ = await get(harness, first)
    assert resp.headers["ETag"] == tags[first]


async def test_a_range_with_if_range_of_another_tag_gets_the_whole_derivative(
    harness: Harness,
) -> None:
    handle = await stored(harness, picture(64, 48, ".png"), name="p.png")
    resp, body = await get(harness, f"/flip/{handle}")
    tag = resp.headers["ETag"]
    part = await harness.cdn.get(f"/flip/{handle}", headers={"Range": "bytes=0-9", "If-Range": tag})
    assert part.status == 206 and await part.read() == body[:10]
    whole = await harness.cdn.get(
        f"/flip/{handle}", headers={"Range": "bytes=0-9", "If-Range": '"other"'}
    )
    assert whole.status == 200 and await whole.read() == body


async def test_cache_false_renders_anew_every_time(harness: Harness) -> None:
    from stowage.processing import metrics

    handle = await stored(harness, picture(64, 48, ".png"), name="p.png")
    await get(harness, f"/resize=width:20/{handle}")  # stored once
    before = metrics.JOBS.value(outcome="ok")
    await get(harness, f"/resize=width:20/{handle}")
    assert metrics.JOBS.value(outcome="ok") == before  # a hit
    for n in range(1, 4):
        resp, _ = await get(harness, f"/cache=false/resize=width:20/{handle}")
        assert resp.headers["Cache-Control"] == "no-store"
        assert metrics.JOBS.value(outcome="ok") == before + n  # a new render each time
    await get(harness, f"/resize=width:20/{handle}", params={"cache": "false"})
    assert metrics.JOBS.value(outcome="ok") == before + 4
    await get(harness, f"/resize=width:20/{handle}")
    assert metrics.JOBS.value(outcome="ok") == before + 4  # the others still hit


async def test_preconditions_hold_for_derivatives_and_compare_strongly(harness: Harness) -> None:
    """A derivative's URL gives new bytes once its file is overwritten: If-Match and
    If-Unmodified-Since are judged as for the file itself (a resumed range of the old
    derivative got the new one's bytes). If-Match and If-Range compare strongly, and a
    tag without its quotes is no tag."""
    handle = await stored(harness, picture(64, 48, ".png"), name="p.png")
    for url in (f"/flip/{handle}", f"/{handle}"):
        resp, body = await get(harness, url)
        tag = resp.headers["ETag"]
        bare, weak = tag.strip('"'), f"W/{tag}"
        for headers, status in [
            ({"If-Match": tag, "Range": "bytes=2-"}, 206),
            ({"If-Match": f'"x", {tag}'}, 200),
            ({"If-Match": '"nope"', "Range": "bytes=2-"}, 412),
            ({"If-Match": weak}, 412),
            ({"If-Match": bare}, 412),
            ({"If-Unmodified-Since": "Mon, 01 Jan 1990 00:00:00 GMT"}, 412),
            ({"If-Unmodified-Since": "Fri, 01 Jan 2100 00:00:00 GMT", "Range": "bytes=2-"}, 206),
            ({"If-Range": weak, "Range": "bytes=0-3"}, 200),
            ({"If-None-Match": weak}, 304),
            ({"If-None-Match": bare}, 200),
            ({"If-None-Match": f'"{bare}'}, 200),
        ]:
            answer = await harness.cdn.get(url, headers=headers)
            got = await answer.read()
            assert answer.status == status, (url, headers, answer.status)
            if status == 200 and "Range" in headers:
                assert got == body  # the whole file, not the range
