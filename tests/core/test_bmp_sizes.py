"""The File API's ``width`` and ``height`` of a BMP or ICO, read from its header: an ICO
was opened by Pillow, whose ICO opener decodes the largest icon (in the web process)."""

from __future__ import annotations

import io
import random
import struct

import pytest
from PIL import IcoImagePlugin

from stowage.core import imagesize
from tests.processing import bmpfiles


@pytest.fixture
def no_decode(monkeypatch: pytest.MonkeyPatch) -> None:
    def decoded(*_: object) -> None:
        raise AssertionError("the icon was decoded")

    monkeypatch.setattr(IcoImagePlugin.IcoFile, "frame", decoded)


@pytest.mark.usefixtures("no_decode")
@pytest.mark.parametrize("seed", [5249])
def test_bmp_and_ico_sizes_are_their_headers(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(60):
        width, height = rng.randrange(1, 300), rng.randrange(1, 300)
        variant = rng.choice([v[0] for v in bmpfiles.BMP_VARIANTS])
        top_down = not variant.startswith("rle") and rng.random() < 0.5
        data = bmpfiles.bmp(variant, width, height, rng, top_down)
        assert imagesize.dimensions(data) == (width, height), variant
        sides = rng.sample([16, 24, 32, 48, 64, 128, 256], rng.randrange(1, 4))
        icon = bytearray(bmpfiles.ico(rng, sides, png_entry=rng.random() < 0.5))
        assert imagesize.dimensions(bytes(icon)) == (max(sides), max(sides))
        # The largest entry's directory made to say 8x8: another is the largest by the
        # directory, and its size is its own header's.
        at = 6 + 16 * sides.index(max(sides))
        struct.pack_into("<BB", icon, at, 8, 8)
        shown = max(s for s in sides if s != max(sides)) if len(sides) > 1 else 0
        if shown and shown * shown > 64:
            assert imagesize.dimensions(bytes(icon)) == (shown, shown)
    assert imagesize.dimensions(b"BM" + bytes(40)) is None  # no DIB header: no BMP
    assert imagesize.dimensions(io.BytesIO(b"\0\0\1\0\0\0").getvalue()) is None
