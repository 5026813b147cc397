"""Source images for the processing scenarios (issue 15), made with libvips (pyvips).

Photo-like rather than flat: smooth colour fields (noise scaled up) plus fine grain, so a
12-megapixel JPEG at quality 85 weighs about 2.5 MB, as a camera's does, and decoding it
costs what a real photo's does. Every source differs (a brightness shift and a block whose
colour and place come from its index), so no server can recognise a repeat."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyvips

TWELVE_MP = (4000, 3000)
HUNDRED_MP = (10000, 10000)


def _grey(width: int, height: int) -> Any:
    fields = pyvips.Image.gaussnoise(-(-width // 16), -(-height // 16), sigma=60, mean=128, seed=15)
    smooth = fields.resize(16, kernel="linear").crop(0, 0, width, height)
    grain = pyvips.Image.gaussnoise(width, height, sigma=6, mean=0, seed=16)
    return smooth + grain


def _base(width: int, height: int) -> Any:
    grey = _grey(width, height)
    return grey.bandjoin([grey.flip("horizontal"), grey.flip("vertical")])


def sources(folder: Path, count: int, size: tuple[int, int] = TWELVE_MP) -> list[Path]:
    """``count`` distinct JPEGs of ``size`` pixels in ``folder``: src-0000.jpg, ..."""
    folder.mkdir(parents=True, exist_ok=True)
    width, height = size
    base = _base(width, height).cast("uchar").copy_memory()
    made = []
    for i in range(count):
        shifted = base.linear([1, 1, 1], [i % 41 - 20] * 3).cast("uchar")
        x, y = (i * 397) % (width - 256), (i * 211) % (height - 256)
        marked = shifted.draw_rect([i % 256, (i * 7) % 256, (i * 13) % 256], x, y, 256, 256)
        path = folder / f"src-{i:04d}.jpg"
        marked.jpegsave(str(path), Q=85)
        made.append(path)
    return made


def large(path: Path, size: tuple[int, int] = HUNDRED_MP) -> Path:
    """One JPEG of ``size`` pixels (100 megapixels by default), written as a stream:
    libvips never holds the whole image, so making it does not take 300 MB."""
    grey = _grey(*size)
    # Other bands by arithmetic, not flips: a flip of an image computed as it streams
    # makes libvips compute it again, which took half of the 9 s this file took to make.
    grey.bandjoin([grey.linear(-1, 255), grey.linear(0.5, 64)]).cast("uchar").jpegsave(
        str(path), Q=85
    )
    return path


def geometry(data: bytes) -> tuple[int, int, str]:
    """(width, height, loader) of an encoded image, e.g. (300, 225, "webpload_buffer")."""
    image = pyvips.Image.new_from_buffer(data, "")
    return image.width, image.height, str(image.get("vips-loader"))
