"""The Pillow path for a JPEG resized to WebP (processing/pillowjpeg.py) runs in the job
processes and answers as libvips would; ``processing_pillow_jpeg = false`` turns it off."""

from __future__ import annotations

from pathlib import Path

import pytest

from stowage.processing import chain, pillowjpeg
from stowage.processing.base import Limits
from stowage.processing.vips import VipsEngine, save_options
from tests.api.harness import Harness
from tests.api.test_transform import get, picture, stored
from tests.api.test_transform_rules import code_of

CHAIN = ["resize=width:300", "output=format:webp"]
LIMITS = Limits(100_000_000, 10**9, 10_000, 30)


def rendered(tmp_path: Path, source: bytes, *, pillow: bool) -> bytes:
    """The bytes one engine makes of ``source`` for CHAIN, outside any job process."""
    path = tmp_path / "source.jpg"
    path.write_bytes(source)
    parsed = chain.parse(CHAIN)
    output = chain.output_for(parsed, "image/jpeg")
    dest = tmp_path / f"{pillow}.webp"
    if pillow:
        assert pillowjpeg.render(path, parsed, output, dest, LIMITS, save_options(parsed, output))
    else:
        VipsEngine(pillow_jpeg=False).render(path, parsed, output, dest, LIMITS)
    return dest.read_bytes()


async def test_the_job_processes_resize_a_jpeg_with_pillow(
    harness: Harness, tmp_path: Path
) -> None:
    source = picture(1600, 1200)
    handle = await stored(harness, source)
    _, body = await get(harness, f"/{'/'.join(CHAIN)}/{handle}")
    assert body == rendered(tmp_path, source, pillow=True)
    assert body != rendered(tmp_path, source, pillow=False)
    cut = await stored(harness, source[: len(source) // 3], "cut.jpg")
    resp = await harness.cdn.get(f"/{'/'.join(CHAIN)}/{cut}")
    assert resp.status == 422 and await code_of(resp) == "INVALID_IMAGE"


@pytest.mark.settings(processing_pillow_jpeg=False)
async def test_turned_off_libvips_renders_every_chain(harness: Harness, tmp_path: Path) -> None:
    source = picture(1600, 1200)
    handle = await stored(harness, source)
    _, body = await get(harness, f"/{'/'.join(CHAIN)}/{handle}")
    assert body == rendered(tmp_path, source, pillow=False)
