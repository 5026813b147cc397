"""Stored BMP and ICO files through the CDN: every transformation answered 415
NOT_AN_IMAGE (the bundled libvips reads neither); a team's saved URLs on BMP files must
work, the main source or a watermark's, collage's or animation's file."""

from __future__ import annotations

import io
import json
import random
import struct
import zipfile

import numpy as np
import pytest
from PIL import Image

from tests.api.harness import Harness
from tests.api.test_pdfcreate import pages_of
from tests.api.test_transform import decoded, get, picture, stored
from tests.processing import bmpfiles

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


def _pixels(body: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(body)).convert("RGBA"))


@pytest.mark.parametrize("seed", [5244, 5245])
async def test_stored_bmp_and_ico_files_are_transformed(harness: Harness, seed: int) -> None:
    rng = random.Random(seed)
    variants = [v[0] for v in bmpfiles.BMP_VARIANTS]
    files = [bmpfiles.bmp(rng.choice(variants), rng.randrange(8, 90), rng.randrange(8, 90), rng)]
    files.append(bmpfiles.ico(rng, rng.sample([16, 32, 48, 64], 2), rng.random() < 0.5))
    for data in files:
        want = np.asarray(bmpfiles.expected(data))
        height, width = want.shape[:2]
        handle = await stored(harness, data, name=rng.choice(["a.bmp", "a.ico", "photo"]))
        resp = await harness.api.get(f"/api/file/{handle}/metadata?width=true&height=true")
        meta = await resp.json()
        _, body = await get(harness, f"/imagesize/{handle}")
        assert (meta["width"], meta["height"]) == (width, height)
        assert json.loads(body) == {"width": width, "height": height}
        resp, body = await get(harness, f"/{handle}".replace("/", "/output=format:png/", 1))
        shown = want[..., 3] > 0
        assert resp.headers["Content-Type"] == "image/png"
        assert (_pixels(body)[shown] == want[shown]).all()
        _, body = await get(harness, f"/resize=width:{width * 2}/{handle}")
        assert decoded(body).width == width * 2
        _, body = await get(harness, f"/rotate=deg:90/output=format:webp/{handle}")
        assert (decoded(body).width, decoded(body).height) == (height, width)


@pytest.mark.parametrize("seed", [5246])
async def test_bmp_files_in_watermark_collage_animate_and_zip(harness: Harness, seed: int) -> None:
    rng = random.Random(seed)
    mark_data = bmpfiles.bmp("rgb24", 20, 20, rng)
    mark = await stored(harness, mark_data, name="mark.bmp")
    base = await stored(harness, picture(120, 90, ".png"), name="p.png")
    icon = await stored(harness, bmpfiles.ico(rng, [16, 32], True), name="i.ico")
    _, body = await get(harness, f"/watermark=file:{mark},position:[top,left]/{base}")
    want = np.asarray(bmpfiles.expected(mark_data))
    assert (_pixels(body)[:20, :20] == want).all()
    _, body = await get(harness, f"/collage=files:[{mark},{icon}],width:200,height:100/{base}")
    assert decoded(body).width == 200
    _, body = await get(harness, f"/animate=width:40,height:40,fit:scale/[{mark},{icon}]")
    assert decoded(body).get("n-pages") == 2
    _, body = await get(harness, f"/pdfcreate/[{mark},{icon}]")
    assert [size for size, _ in pages_of(body)] == [(20, 20), (32, 32)]
    _, body = await get(harness, f"/zip/[{mark},{icon}]")
    with zipfile.ZipFile(io.BytesIO(body)) as archive:
        assert mark_data in [archive.read(name) for name in archive.namelist()]


@pytest.mark.parametrize("seed", [5247])
async def test_a_bmp_header_bomb_and_a_damaged_bmp_are_422(harness: Harness, seed: int) -> None:
    rng = random.Random(seed)
    data = bytearray(bmpfiles.bmp("rle8", 16, 16, rng))
    struct.pack_into("<ii", data, 18, 100_000, 100_000)
    bomb = await stored(harness, bytes(data), name="bomb.bmp")
    for path in (f"/imagesize/{bomb}", f"/resize=width:100/{bomb}"):
        _, body = await get(harness, path, status=422)
        assert json.loads(body)["error"]["code"] == "IMAGE_TOO_LARGE"
    cut = await stored(harness, bmpfiles.bmp("rgb24", 40, 40, rng)[:200], name="cut.bmp")
    _, body = await get(harness, f"/resize=width:10/{cut}", status=422)
    assert json.loads(body)["error"]["code"] == "INVALID_IMAGE"
