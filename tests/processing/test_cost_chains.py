"""Chains whose real work the estimate (processing/cost.py) once missed by far, run on
generated noise and compared with their CPU time on one libvips thread.

Before: sixteen ``enhance`` on a 320x240 PNG took 3.4 s for an estimate of 0.4 s
(thirty-two: 17-25 s), each computing the whole chain below it again."""

from __future__ import annotations

import dataclasses
import random
import time
from pathlib import Path

import numpy as np
import pytest
import pyvips
from PIL import Image

from stowage import errors
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
        source = noise(
            tmp_path / f"s{case}.png", rng.randint(200, 360), rng.randint(150, 280), case
        )
        count = rng.randint(14, 20)
        segments = [f"enhance=preset:{rng.choice(presets)}" for _ in range(count)]
        seconds, spent = estimated_and_spent(source, segments, tmp_path / f"o{case}.png")
        assert spent < 3 * seconds + SLACK, (count, seconds, spent)


def noise_gif(path: Path, frames: int, side: int, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    shots = [
        Image.fromarray(rng.integers(0, 256, (side, side, 3), dtype=np.uint8))
        for _ in range(frames)
    ]
    shots[0].save(path, save_all=True, append_images=shots[1:], duration=50)
    return path


def test_tasks_on_many_small_frames_cost_what_they_are_estimated(tmp_path: Path) -> None:
    """Each frame of an animation gets its own pipeline: a task's own cost, besides its
    pixels, counts once a frame (``cost.CALL``). 400 frames of 64x64 noise through
    torn_edges took 17.8 s for an estimate of 3.6 s; a still of one frame 0.05 s."""
    rng = random.Random(4120)
    tasks = ["torn_edges", "vignette", "enhance", f"rotate=deg:{rng.randint(1, 89)}", "flip"]
    for case, task in enumerate(rng.sample(tasks, 3)):
        count, side = rng.randint(80, 120), rng.randint(12, 40)
        source = noise_gif(tmp_path / f"s{case}.gif", count, side, case)
        seconds, spent = estimated_and_spent(source, [task], tmp_path / f"o{case}", "image/gif")
        assert spent / 3 < seconds and spent < 2 * seconds + SLACK, (task, count, side)


def test_a_chain_too_costly_at_a_photos_rate_is_refused_before_its_detail_is_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Measuring a source's detail decodes all of it (3-10 s for 60 frames of a 600x600
    WebP): a chain over the limit at a photo's save rate is refused without it."""
    rng = random.Random(4122)
    monkeypatch.setattr(detail, "measured", lambda opened: pytest.fail("measured"))
    for case in range(3):
        side, count = rng.randint(150, 250), rng.randint(40, 60)
        pixels = np.random.default_rng(case).integers(0, 256, (side * count, side, 3))
        strip = pyvips.Image.new_from_array(pixels.astype(np.uint8)).copy(interpretation="srgb")
        strip.set_type(pyvips.GValue.gint_type, "page-height", side)
        source = tmp_path / f"s{case}.webp"
        strip.webpsave(str(source), effort=0)
        parsed = chain.parse([rng.choice(["blur", "torn_edges", "flip"]), "output=format:webp"])
        output = chain.output_for(parsed, "image/webp")
        opened = frames.open_source(str(source), parsed, output, LIMITS, "sequential")
        least = cost.estimate(opened, parsed, opened.image.width, output.format)
        limits = dataclasses.replace(LIMITS, max_cost=least * rng.uniform(0.2, 0.9))
        with pytest.raises(errors.ProcessingTooCostly):
            VipsEngine(threads_per_job=1).render(source, parsed, output, tmp_path / "o", limits)
