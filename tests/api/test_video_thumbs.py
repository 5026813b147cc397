"""The stills of a completed video conversion (processing/videothumbs.py): the status
answer's ``data.thumb``, ``thumb100x100`` and ``thumb200x200`` are stored JPEGs of one
frame of the result, fitted within their box and never enlarged, removed with the
source like the result; an audio result has none."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pyvips
from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st

from stowage.processing import videothumbs
from stowage.processing.base import Task
from tests.api.harness import Harness
from tests.api.test_video import clip, finished, stored, url

NAMES = ("thumb", "thumb100x100", "thumb200x200")


async def image(harness: Harness, address: str) -> pyvips.Image:
    assert address.startswith(harness.settings.cdn_url())
    resp = await harness.cdn.get(f"/{address.rsplit('/', 1)[-1]}")
    assert resp.status == 200, await resp.text()
    assert resp.headers["Content-Type"] == "image/jpeg"
    found = pyvips.Image.new_from_buffer(await resp.read(), "")
    assert found.get("vips-loader") == "jpegload_buffer"
    return found


async def test_an_h264_result_has_three_stills_fitted_and_purged_with_the_source(
    harness: Harness, tmp_path: Path
) -> None:
    handle = await stored(harness, clip(tmp_path / "c.mp4"))  # 2 s, 160x120
    done = await finished(harness, url(harness, "video_convert=preset:h264", handle))
    assert done["status"] == "completed", done
    assert set(done["data"]) == {"url", *NAMES}
    sizes = {n: (await image(harness, done["data"][n])).width for n in NAMES}
    heights = {n: (await image(harness, done["data"][n])).height for n in NAMES}
    # The frame's own size; 100x100 fits it (4:3) within the box; 200x200 does not enlarge.
    assert [(sizes[n], heights[n]) for n in NAMES] == [(160, 120), (100, 75), (160, 120)]
    handles = {done["data"][n].rsplit("/", 1)[-1] for n in (*NAMES, "url")}
    assert len(handles) == 4  # each still is a file of its own
    params = harness.policy(harness.open_app, call=["write"], handle=handle)
    new = clip(tmp_path / "d.mp4", seconds=1)
    resp = await harness.api.post(f"/api/file/{handle}", params=params, data=new)
    assert resp.status == 200, await resp.text()
    deadline = time.monotonic() + 10
    for gone in handles:
        while (await harness.cdn.get(f"/{gone}")).status != 404:
            assert time.monotonic() < deadline, f"{gone} of the old version is still served"
            await asyncio.sleep(0.1)


async def test_the_stills_are_of_the_result_at_its_size(harness: Harness, tmp_path: Path) -> None:
    handle = await stored(harness, clip(tmp_path / "c.mp4"))
    task = "video_convert=preset:h264,width:320,height:180,aspect_mode:preserve,thumbnail_offset:1"
    done = await finished(harness, url(harness, task, handle))
    assert done["status"] == "completed", done
    found = [await image(harness, done["data"][n]) for n in NAMES]
    assert [(i.width, i.height) for i in found] == [(240, 180), (100, 75), (200, 150)]


async def test_an_audio_result_has_no_stills(harness: Harness, tmp_path: Path) -> None:
    handle = await stored(harness, clip(tmp_path / "c.mp4"))
    done = await finished(harness, url(harness, "av_convert=preset:mp3", handle))
    assert done["status"] == "completed", done
    assert set(done["data"]) == {"url"}


@examples(max_examples=50, deadline=None)
@given(
    asked=st.one_of(st.none(), st.integers(0, 86_399)),
    seconds=st.floats(0, 100_000, allow_nan=False),
)
def test_the_frame_is_inside_the_result(asked: int | None, seconds: float) -> None:
    options = () if asked is None else (("thumbnail_offset", asked),)
    at = videothumbs.offset(Task("video_convert", options), seconds)
    if seconds > 0:
        assert 0 <= at < seconds
        assert at == (asked if asked is not None and asked < seconds else min(1.0, seconds / 2))
    else:  # a length unknown: the offset asked, or the start
        assert at == (asked or 0)
