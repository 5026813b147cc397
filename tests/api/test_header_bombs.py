"""A source whose header claims more pixels than the limit is refused in every position a
source is read in: the URL's own, a later frame of ``animate``, a collage's cell, a
watermark (processing/admission.py ``check_claimed``).

A GIF's claim is its logical screen; libvips reads its 1x1 frames instead when the screen
is far larger, so a GIF of a 12000x9000 or 65535x65535 screen got 422 as the main source
and 200 in every other position."""

from __future__ import annotations

import io
import random
import struct

import pytest
from PIL import Image

from tests.api.harness import Harness
from tests.api.test_transform import picture, stored
from tests.api.test_transform_rules import code_of, header_bomb

KINDS = ["gif-frames", "gif", "png", "jpeg", "webp"]


def gif_of_tiny_frames(rnd: random.Random, width: int, height: int) -> bytes:
    """A GIF that decodes (1-3 frames of 1x1) under a logical screen of width x height."""
    colours = [tuple(rnd.randrange(256) for _ in range(3)) for _ in range(rnd.randint(1, 3))]
    frames = [Image.new("RGB", (1, 1), c) for c in colours]
    out = io.BytesIO()
    frames[0].save(out, "GIF", save_all=True, append_images=frames[1:], duration=50)
    data = bytearray(out.getvalue())
    data[6:10] = struct.pack("<HH", width, height)
    return bytes(data)


def positions(bomb: str, fine: str) -> dict[str, str]:
    return {
        "main": f"/resize=width:10/{bomb}",
        "animate, later": f"/animate/[{fine},{bomb}]",
        "animate, first": f"/animate/[{bomb},{fine}]",
        "collage": f"/collage=files:[{bomb}],width:100,height:80/{fine}",
        "watermark": f"/watermark=file:{bomb}/{fine}",
    }


@pytest.mark.parametrize("seed", range(5061, 5064))
async def test_a_header_bomb_is_refused_in_every_position(harness: Harness, seed: int) -> None:
    rnd = random.Random(seed)
    most = harness.parts.settings.processing_max_input_pixels
    fine = await stored(harness, picture(60, 40))
    for kind in KINDS:
        side = 16383 if kind == "webp" else 65535
        width = rnd.choice([side, rnd.randrange(most // side + 1, side)])
        height = rnd.randrange(most // width + 1, side + 1)
        if kind == "gif-frames":
            data = gif_of_tiny_frames(rnd, width, height)
        else:
            data = header_bomb(kind, width, height)
        bomb = await stored(harness, data, f"b.{kind.split('-')[0]}")
        for where, path in positions(bomb, fine).items():
            resp = await harness.cdn.get(path)
            assert resp.status == 422, (kind, where, width, height, resp.status)
            assert await code_of(resp) == "IMAGE_TOO_LARGE", (kind, where)


async def test_the_same_gif_with_its_own_screen_is_read_everywhere(harness: Harness) -> None:
    """The control: the GIF of 1x1 frames under a screen of their size is no bomb."""
    tiny = await stored(harness, gif_of_tiny_frames(random.Random(5064), 1, 1), "t.gif")
    fine = await stored(harness, picture(60, 40))
    for where, path in positions(tiny, fine).items():
        assert (await harness.cdn.get(path)).status == 200, where
