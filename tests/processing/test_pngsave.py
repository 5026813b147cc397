"""PNG with ``compress``: zlib's level by the result's size (``processing/pngsave.py``).

At level 9 for every size, a PNG past about 6.6 MP with ``compress`` was estimated over
the default 8 s and refused (422 PROCESSING_TOO_COSTLY): a saved URL of a large PNG
answered no image. Each size now gets a level whose worst case fits, and is admitted.
"""

from __future__ import annotations

import dataclasses
import random
import zlib
from pathlib import Path

import pytest

from stowage.processing import chain, cost, frames, pngsave
from stowage.processing.vips import VipsEngine
from tests.processing.test_cost import LIMITS
from tests.processing.test_cost_chains import smooth

#: The default limit on a job's estimated work (``processing_max_job_cost``).
DEFAULT_COST = 8.0
SEGMENTS = ["output=format:png,compress:true"]


def zlib_level_class(png: bytes) -> int:
    """FLEVEL of the first IDAT's zlib header: 3 for levels 7-9, 2 for 6, lower below."""
    at = png.index(b"IDAT") + 4
    return png[at + 1] >> 6


def sides(rng: random.Random, least_mp: float, most_mp: float) -> tuple[int, int]:
    pixels = rng.uniform(least_mp, most_mp) * 1e6
    width = int((pixels * rng.uniform(0.6, 1.7)) ** 0.5)
    return width, int(pixels / width)


@pytest.mark.parametrize("seed", range(5035, 5038))
def test_compress_on_a_png_of_any_size_is_admitted_at_its_level(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    for least, most in ((0.5, 4.0), (4.1, 12.0), (12.1, 16.0)):
        width, height = sides(rng, least, most)
        source = smooth(tmp_path / f"s{least}.jpg", width, height, seed)
        parsed = chain.parse(SEGMENTS)
        output = chain.output_for(parsed, "image/jpeg")
        opened = frames.open_source(str(source), parsed, output, LIMITS, "sequential")
        seconds = cost.estimate(opened, parsed, width, output.format)
        assert seconds <= DEFAULT_COST, (width, height, seconds)  # at level 9: refused
        limits = dataclasses.replace(LIMITS, max_cost=DEFAULT_COST)
        dest = tmp_path / f"o{least}.png"
        VipsEngine(threads_per_job=1).render(source, parsed, output, dest, limits)
        data = dest.read_bytes()
        level = pngsave.level(width * height)
        assert zlib_level_class(data) == (3 if level >= 7 else 2), (width, height, level)
        assert level == (9 if most <= 4 else 8 if most <= 12 else 6)


def test_the_levels_grow_with_no_size_and_fit_the_default_cost() -> None:
    """Each tier's worst case (its rate at its largest size) fits the default limit,
    and a larger result never gets a slower level."""
    last = 10
    for most, level, rate in pngsave.LEVELS:
        assert level <= last
        last = level
        if most != float("inf"):
            assert rate * most <= DEFAULT_COST, (most, rate)
    assert zlib.compressobj(pngsave.level(1)).compress(b"x")  # a real zlib level
