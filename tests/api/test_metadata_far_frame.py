"""A JPEG whose frame header lies past the first MiB (a Google Camera portrait's extended
XMP holds its depth map, megabytes, before the frame; a large ICC profile), and a TIFF
whose directory does (libtiff writes it after the pixels), have their metadata width and
height, on the local disk and in every remote store, as ``imagesize`` has them: the File
API read only the first MiB and answered none (for a TIFF, but on the local disk). The
segments are walked by their headers, the directory read where it lies; nothing decoded.
Sizes and segment bytes from seeded random draws (probe seed 5149)."""

from __future__ import annotations

import json
import random
import struct

import pyvips

from tests.api.harness import Harness
from tests.api.shared_store import settings, shared  # noqa: F401 - the fixtures
from tests.api.test_transform import get, stored

XMP_EXTENSION = b"http://ns.adobe.com/xmp/extension/\0"


def portrait(rng: random.Random, before: int) -> tuple[bytes, int, int]:
    """A JPEG with ``before`` bytes or more of APP1 segments ahead of its frame header."""
    width, height = rng.randint(20, 300), rng.randint(20, 300)
    plain = pyvips.Image.black(width, height, bands=3) + [rng.randint(0, 255)] * 3
    jpeg: bytes = plain.cast("uchar").jpegsave_buffer()
    segments = b""
    while len(segments) < before:
        body = XMP_EXTENSION + rng.randbytes(rng.randint(30_000, 65_000))
        segments += b"\xff\xe1" + struct.pack(">H", len(body) + 2) + body
    return jpeg[:2] + segments + jpeg[2:], width, height


async def test_a_frame_header_past_the_first_mib_is_read(harness: Harness) -> None:
    rng = random.Random(5149)
    for before in (rng.randint(1_050_000, 1_500_000), rng.randint(2_000_000, 3_000_000)):
        data, width, height = portrait(rng, before)
        handle = await stored(harness, data, name="portrait.jpg")
        resp = await harness.api.get(
            f"/api/file/{handle}/metadata", params={"width": "true", "height": "true"}
        )
        assert await resp.json() == {"width": width, "height": height}, before
        _, body = await get(harness, f"/imagesize/{handle}")
        assert json.loads(body) == {"width": width, "height": height}


async def test_a_tiffs_directory_past_the_first_mib_is_read(harness: Harness) -> None:
    rng = random.Random(5150 - 1)
    for options in ({}, {"bigtiff": True}, {"tile": True}, {"bigtiff": True, "tile": True}):
        width, height = rng.randint(600, 900), rng.randint(600, 900)
        plain = pyvips.Image.black(width, height, bands=3) + [rng.randint(0, 255)] * 3
        data: bytes = plain.cast("uchar").tiffsave_buffer(**options)
        assert int.from_bytes(data[4:8], "little") > 1 << 20 or options.get("bigtiff")
        handle = await stored(harness, data, name="scan.tif")
        resp = await harness.api.get(
            f"/api/file/{handle}/metadata", params={"width": "true", "height": "true"}
        )
        assert await resp.json() == {"width": width, "height": height}, options
