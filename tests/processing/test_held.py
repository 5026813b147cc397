"""Rotations by other than a right angle are computed once into memory (``ops.held``):
left lazy, a resize after one asked libvips for it again and again. What is held stays
within the output limit and, all holds of a job together, within its total pixels."""

from __future__ import annotations

import time
from pathlib import Path

import pyvips

from stowage.processing import chain, ops
from stowage.processing.base import Limits
from stowage.processing.vips import VipsEngine

LIMITS = Limits(10**9, 10**10, 10_000, 120, max_frames=10**5, max_total_pixels=10**10)


def test_holds_stay_within_the_output_limit_and_the_jobs_pixels() -> None:
    small, wide = pyvips.Image.black(10, 10), pyvips.Image.black(200, 1)
    with ops.engine_limits(100, hold_pixels=150):
        assert ops.held(small) is not small  # computed, in memory
        assert ops.held(small) is small  # 100 of 150 pixels are held: lazy
        assert ops.held(wide) is wide  # past the output limit: the engine refuses it
    assert ops.held(small) is small  # outside a job nothing is held


def cpu_of(source: Path, segments: list[str], dest: Path) -> float:
    parsed = chain.parse(segments)
    output = chain.output_for(parsed, "image/jpeg")
    started = time.process_time()
    VipsEngine(threads_per_job=1).render(source, parsed, output, dest, LIMITS)
    return time.process_time() - started


def test_a_resize_after_a_tilt_does_not_compute_it_again(tmp_path: Path) -> None:
    grey = pyvips.Image.gaussnoise(250, 190, sigma=50, mean=128).resize(8).cast("uchar")
    photo = tmp_path / "photo.jpg"
    grey.bandjoin([grey, grey]).jpegsave(str(photo))
    tilted = cpu_of(photo, ["polaroid=rotate:252"], tmp_path / "a.jpg")
    shrunk = cpu_of(photo, ["polaroid=rotate:252", "resize=height:184"], tmp_path / "b.jpg")
    # Lazy, the shrunk one took 2.7 times the tilted one's CPU (0.91 s against 0.34 s).
    assert shrunk < 1.5 * tilted, (tilted, shrunk)
