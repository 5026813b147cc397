"""The filter tasks' blocks (processing/filters.py ``blocks``), which pixelate,
partial_pixelate and pixelate_faces share: blocks of ``amount`` x ``amount`` pixels laid
from the top-left corner, cut at the right and bottom edges, every pixel in one. Whole
blocks only left the last columns and rows as they were, and a side cut to the short
side of a narrow box made square blocks of it."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
import pyvips

from stowage.processing import chain, filters
from stowage.processing.base import Limits, Task
from stowage.processing.vips import VipsEngine

Box = tuple[int, int, int, int]


def noise(width: int, height: int, bands: int, seed: int) -> pyvips.Image:
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, (height, width, bands), dtype=np.uint8)
    return pyvips.Image.new_from_array(pixels, interpretation="srgb" if bands >= 3 else "b-w")


def as_array(image: pyvips.Image) -> np.ndarray:
    """Rows x columns x bands, whatever the size (pyvips drops a 1x1 grey image's axes)."""
    return np.asarray(image.numpy(), dtype=np.float64).reshape(image.height, image.width, -1)


def assert_in_blocks(source: np.ndarray, out: np.ndarray, box: Box, side: int) -> None:
    """Each pixel of ``box`` in ``out`` is the mean of its block of the source, rounded
    once (within half a level, and a few 256ths for the 16 bits it is computed in):
    blocks of ``side`` laid from the box's top-left corner, each min(side, what is left
    of the box) on each axis, but a last block of one pixel joins the one before it; and
    a block is one colour."""
    x, y, w, h = box
    for top, bottom in _spans(y, h, side):
        for left, right in _spans(x, w, side):
            rows, columns = slice(top, bottom), slice(left, right)
            block = out[rows, columns].reshape(-1, out.shape[2])
            mean = source[rows, columns].reshape(-1, source.shape[2]).mean(axis=0)
            assert (block == block[0]).all(), (box, side, (left, top))
            assert np.abs(block[0] - mean).max() <= 0.51, (box, side, (left, top), block[0], mean)


def _spans(start: int, length: int, side: int) -> list[tuple[int, int]]:
    spans = [(a, min(a + side, start + length)) for a in range(start, start + length, side)]
    if len(spans) > 1 and spans[-1][1] - spans[-1][0] == 1:
        spans[-2:] = [(spans[-2][0], spans[-1][1])]
    return spans


@pytest.mark.parametrize("seed", range(40))
def test_pixelate_puts_every_pixel_in_a_block(seed: int) -> None:
    rng = random.Random(seed)
    width, height = rng.choice([rng.randint(1, 120), 21]), rng.choice([rng.randint(1, 90), 21])
    bands = rng.choice([1, 3])
    amount = rng.choice([2, 3, rng.randint(2, 100)])
    image = noise(width, height, bands, seed)
    out = filters.pixelate(image, Task("pixelate", (("amount", amount),))).copy_memory()
    assert (out.width, out.height, out.bands) == (width, height, bands)
    assert_in_blocks(as_array(image), as_array(out), (0, 0, width, height), amount)


@pytest.mark.parametrize("seed", range(6))
def test_pixelate_of_a_jpeg_read_in_sequence_makes_its_image(seed: int, tmp_path: Path) -> None:
    """The cut blocks are read as parts: a JPEG opened for one pass failed ("out of order
    read at line 1024") for an amount that does not divide its sides."""
    rng = random.Random(seed)
    width, height = rng.randrange(1100, 2100), rng.randrange(1100, 1600)
    path = tmp_path / "photo.jpg"
    noise(width, height, 3, seed).jpegsave(str(path))
    amount = rng.choice([n for n in range(30, 101) if width % n and height % n])
    parsed = chain.parse([f"pixelate=amount:{amount}"])
    output = chain.output_for(parsed, "image/jpeg")
    limits = Limits(10**9, 10**10, 10_000, 120, max_frames=10**5, max_total_pixels=10**10)
    made = VipsEngine(threads_per_job=1).render(path, parsed, output, path.with_name("o"), limits)
    assert (made.width, made.height) == (width, height)
