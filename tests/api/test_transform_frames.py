"""Pages and frames through the CDN: an animated GIF keeps its frames, a still format
gets the first, and output=page picks the page that was checked (processing/frames.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import pyvips

from tests.api.harness import Harness
from tests.api.test_transform import decoded, get, stored
from tests.processing.test_frames import COLOURS, animation, near, tiff_with_a_huge_first_page

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


async def test_an_animated_gif_keeps_its_frames(harness: Harness, tmp_path: Path) -> None:
    handle = await stored(
        harness, animation(tmp_path / "a.gif", 40, 24, 4, 2).read_bytes(), "a.gif"
    )
    resp, body = await get(harness, f"/resize=width:20/flip/{handle}")
    assert resp.headers["Content-Type"] == "image/gif"
    strip = pyvips.Image.new_from_buffer(body, "", n=-1)
    assert strip.get("n-pages") == 4 and strip.get("page-height") == 12 and strip.width == 20
    assert strip.get("delay") == [100, 200, 300, 400] and strip.get("loop") == 2
    for index in range(4):
        got = tuple(round(v) for v in strip(15, index * 12 + 6)[:3])
        assert near(got, COLOURS[index]), (index, got)
    _, body = await get(harness, f"/resize=width:20/output=format:webp/{handle}")
    assert pyvips.Image.new_from_buffer(body, "", n=-1).get("n-pages") == 4
    _, body = await get(harness, f"/resize=width:20/output=format:png/{handle}")
    still = decoded(body)
    assert (still.width, still.height) == (20, 12)
    assert near(tuple(round(v) for v in still(15, 6)[:3]), COLOURS[0])


async def test_output_page_decodes_the_page_it_checked(harness: Harness, tmp_path: Path) -> None:
    small = pyvips.Image.black(80, 60).new_from_image([0, 0, 255]).cast("uchar")
    tiff = tiff_with_a_huge_first_page(tmp_path / "two.tif", small)
    handle = await stored(harness, tiff.read_bytes(), "two.tif")
    _, body = await get(harness, f"/output=page:2,format:png/resize=width:40/{handle}")
    image = decoded(body)
    assert (image.width, image.height) == (40, 30)
    assert near(tuple(round(v) for v in image(20, 15)[:3]), (0, 0, 255))
    resp = await harness.cdn.get(f"/resize=width:40/{handle}")  # page 1: 1.6 gigapixels
    assert resp.status == 422
    resp = await harness.cdn.get(f"/output=page:3,format:png/{handle}")
    assert resp.status == 400
    gif = await stored(harness, animation(tmp_path / "g.gif", 40, 24, 3).read_bytes(), "g.gif")
    _, body = await get(harness, f"/output=page:2,format:png/resize=width:20/{gif}")
    assert near(tuple(round(v) for v in decoded(body)(15, 6)[:3]), COLOURS[1])
