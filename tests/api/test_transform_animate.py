"""``animate`` of stored files at the CDN's URLs: the frames the result has are what is
estimated, limited, sized, saved and described (processing/composite.py, montage.py)."""

from __future__ import annotations

import json
import random
import re

import pytest
import pyvips

from tests.api.harness import Harness
from tests.api.test_transform import decoded, get, stored
from tests.api.test_transform_rules import code_of
from tests.api.test_transform_sources import colour, plain
from tests.processing.test_frames import COLOURS

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


def counted(text: str, name: str) -> float:
    """The sum of a counter's samples in the /metrics text."""
    return sum(float(v) for v in re.findall(rf"^{name}(?:{{[^}}]*}})? (\S+)$", text, re.M))


def gif(width: int, height: int, frames: int) -> bytes:
    made = [
        pyvips.Image.black(width, height).new_from_image(list(COLOURS[i % 5])).cast("uchar")
        for i in range(frames)
    ]
    strip = pyvips.Image.arrayjoin(made, across=1).copy()
    strip.set_type(pyvips.GValue.gint_type, "page-height", height)
    data: bytes = strip.write_to_buffer(".gif")
    return data


async def test_a_long_list_is_estimated_with_all_its_frames(harness: Harness) -> None:
    """16 frames of 1800 x 1800 were estimated as one (the first file's), ran to the
    deadline and held a big job's slot: refused from the headers, no big job run."""
    rng = random.Random(16)
    handles = [
        await stored(harness, plain(800, 600, list(COLOURS[i])), f"{i}.png") for i in range(4)
    ]
    listed = ",".join(rng.choice(handles) for _ in range(16))
    before = counted(await harness.metrics(), "stowage_processing_big_jobs_total")
    resp = await harness.cdn.get(f"/animate=width:1800,height:1800/[{listed}]")
    assert resp.status == 422 and await code_of(resp) == "PROCESSING_TOO_COSTLY"
    details = (await resp.json())["error"]["details"]
    assert details["estimated_seconds"] > details["max_seconds"]
    assert counted(await harness.metrics(), "stowage_processing_big_jobs_total") == before


@pytest.mark.parametrize("first", [True, False])
async def test_an_animated_file_is_one_frame_wherever_listed(harness: Harness, first: bool) -> None:
    many = await stored(harness, gif(200, 200, 300), "many.gif")
    still = await stored(harness, plain(200, 200, [0, 0, 255]), "still.png")
    listed = [many, still] if first else [still, many]
    resp, body = await get(harness, f"/animate/[{','.join(listed)}]")
    strip = pyvips.Image.new_from_buffer(body, "", n=-1)
    assert resp.headers["Content-Type"] == "image/gif" and strip.get("n-pages") == 2
    got = colour(strip, 100, 100 if first else 300)
    assert all(abs(a - b) < 30 for a, b in zip(got, COLOURS[0], strict=True)), got


async def test_height_alone_scales_the_width(harness: Harness) -> None:
    grey = pyvips.Image.black(200, 320).new_from_image([90]).cast("uchar")
    tall = await stored(harness, grey.write_to_buffer(".jpg"), "grey.jpg")
    rgb = await stored(harness, plain(50, 50, [255, 0, 0], ".jpg"), "rgb.jpg")
    _, body = await get(harness, f"/animate=height:32/[{tall},{rgb}]")
    strip = pyvips.Image.new_from_buffer(body, "", n=-1)
    assert (strip.width, strip.get("page-height")) == (20, 32)


@pytest.mark.parametrize(("fmt", "mimetype"), [("png", "image/png"), ("jpg", "image/jpeg")])
async def test_a_still_format_is_the_first_frame(harness: Harness, fmt: str, mimetype: str) -> None:
    handles = [await stored(harness, plain(60, 40, list(COLOURS[i])), f"{i}.png") for i in range(3)]
    resp, body = await get(harness, f"/animate=delay:300/output=format:{fmt}/[{','.join(handles)}]")
    image = decoded(body)
    assert resp.headers["Content-Type"] == mimetype and (image.width, image.height) == (60, 40)
    got = colour(image, 30, 20)
    assert all(abs(a - b) < 30 for a, b in zip(got, COLOURS[0], strict=True)), got


async def test_metadata_of_an_animation_is_one_frames(harness: Harness) -> None:
    handles = [
        await stored(harness, plain(200, 100, list(COLOURS[i])), f"{i}.png") for i in range(3)
    ]
    listed = ",".join(handles)
    _, body = await get(harness, f"/animate/metadata=p:[width,height]/[{listed}]")
    assert json.loads(body) == {"width": 200, "height": 100}
    _, body = await get(harness, f"/animate=width:100/metadata=p:[width,height]/[{listed}]")
    assert json.loads(body) == {"width": 100, "height": 50}


async def test_a_file_turned_by_exif_is_fitted_like_the_others(harness: Harness) -> None:
    photo = pyvips.Image.black(200, 100).new_from_image([255, 0, 0]).cast("uchar").copy()
    photo.set_type(pyvips.GValue.gint_type, "orientation", 6)
    turned = await stored(harness, photo.write_to_buffer(".jpg"), "o6.jpg")
    square = await stored(harness, plain(100, 100, [0, 0, 255]), "s.png")
    _, body = await get(harness, f"/rotate=deg:exif/animate=background:white/[{turned},{square}]")
    strip = pyvips.Image.new_from_buffer(body, "", n=-1)
    assert (strip.width, strip.get("page-height"), strip.height) == (100, 200, 400)
    assert colour(strip, 50, 200 + 100) == (0, 0, 255)  # the square, centred in frame 2
    assert colour(strip, 50, 200 + 20) == (255, 255, 255)
