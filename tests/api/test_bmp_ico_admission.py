"""A BMP or ICO whose header claims more pixels than the limit is refused 422 before its
job takes a slot (processing/admission.py ``refuse_early``), as a PNG, GIF, JPEG or WebP
is: with every slot busy it waited and got 503 ``PROCESSING_BUSY``, its 422 coming only
from the job process. An ICO's claim is its shown entry's header, read where it lies:
in the first page, past it, past ``admission.HEAD_BYTES`` (a seek and a small read), or
after a directory longer than the first page. Claims and layouts from seeded draws."""

from __future__ import annotations

import random
import struct

import pytest

from tests.api.harness import Harness
from tests.api.test_transform import picture, stored
from tests.api.test_transform_rules import code_of
from tests.processing import bmpfiles


def claim(rng: random.Random, most: int) -> tuple[int, int]:
    width = rng.randrange(most // 65535 + 1, 65536)
    return width, rng.randrange(most // width + 1, 65536)


def bmp_bomb(rng: random.Random, claimed: tuple[int, int]) -> bytes:
    data = bytearray(bmpfiles.bmp(rng.choice(["rgb24", "rle8", "pal4", "rgb565"]), 8, 8, rng))
    height = -claimed[1] if rng.random() < 0.5 else claimed[1]  # rows top-down, or not
    struct.pack_into("<ii", data, 18, claimed[0], height)
    return bytes(data)


def ico_bomb(rng: random.Random, claimed: tuple[int, int]) -> bytes:
    entries = rng.choice([1, rng.randrange(2, 40), rng.randrange(256, 2000)])
    pad = rng.choice([0, rng.randrange(4096, 100_000), rng.randrange(140_000, 400_000)])
    return bmpfiles.far_ico(rng, claimed, entries, pad, png=rng.random() < 0.5)


@pytest.mark.settings(processing_jobs=1, processing_queue=0)
@pytest.mark.parametrize("seed", [5274, 5275, 5276])
async def test_a_bmp_or_ico_past_the_pixel_limit_is_refused_whatever_the_load(
    harness: Harness, seed: int
) -> None:
    rng = random.Random(seed)
    most = harness.parts.settings.processing_max_input_pixels
    pool = harness.parts.processor.pool
    pool._small.admitted = pool.jobs  # every slot taken, no queue: 503 at once for a job
    try:
        for make, name in [(bmp_bomb, "b.bmp"), (ico_bomb, "b.ico")] * 3:
            handle = await stored(harness, make(rng, claim(rng, most)), name)
            chain = rng.choice(["resize=width:10", "flip", "imagesize", "output=format:png"])
            resp = await harness.cdn.get(f"/{chain}/{handle}")
            assert resp.status == 422, (name, resp.status, await resp.read())
            assert await code_of(resp) == "IMAGE_TOO_LARGE", name
        within = rng.choice([bmpfiles.bmp("rgb24", 30, 20, rng), picture(30, 20, ".png")])
        resp = await harness.cdn.get(f"/flip/{await stored(harness, within, 'w.bmp')}")
        assert resp.status == 503  # the control: within the limit, the pool's answer
    finally:
        pool._small.admitted = 0
