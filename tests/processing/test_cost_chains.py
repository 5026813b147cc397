"""Chains whose real work the estimate (processing/cost.py) once missed by far, run on
generated noise and compared with their CPU time on one libvips thread.

Before: sixteen ``enhance`` on a 320x240 PNG took 3.4 s for an estimate of 0.4 s
(thirty-two: 17-25 s), each computing the whole chain below it again."""

from __future__ import annotations

import random
import time
from pathlib import Path

from stowage.processing import chain, cost, detail, frames
from stowage.processing.effects_restore import PRESETS
from stowage.processing.vips import VipsEngine
from tests.processing.test_cost import LIMITS
from tests.processing.test_cost_saves import noise

SLACK = 0.3  # seconds: a job's fixed costs


def estimated_and_spent(
    source: Path, segments: list[str], dest: Path, mimetype: str = "image/png"
) -> tuple[float, float]:
    parsed = chain.parse(segments)
    output = chain.output_for(parsed, mimetype)
    opened = frames.open_source(str(source), parsed, output, LIMITS, "sequential")
    seconds = cost.estimate(
        opened, parsed, opened.image.width, output.format, detail=lambda: detail.measured(opened)
    )
    started = time.process_time()
    VipsEngine(threads_per_job=1).render(source, parsed, output, dest, LIMITS)
    spent = time.process_time() - started
    print(f"{segments[:3]} ({len(segments)} tasks): estimated {seconds:.2f} s, took {spent:.2f} s")
    return seconds, spent


def test_repeated_measuring_tasks_cost_what_they_are_estimated(tmp_path: Path) -> None:
    """A task that measures its whole input (enhance's percentiles) gets it held: n of
    them cost n times one, as estimated, not n squared."""
    rng = random.Random(4101)
    presets = sorted(set(PRESETS) - {"fix_noise"})  # a median filter: priced on its own
    for case in range(3):
        source = noise(tmp_path / f"s{case}.png", rng.randint(200, 360), rng.randint(150, 280), case)
        count = rng.randint(14, 20)
        segments = [f"enhance=preset:{rng.choice(presets)}" for _ in range(count)]
        seconds, spent = estimated_and_spent(source, segments, tmp_path / f"o{case}.png")
        assert spent < 3 * seconds + SLACK, (count, seconds, spent)
