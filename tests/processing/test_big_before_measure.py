"""A job estimated big at a photo's save rate gives its small slot back before its
source's detail is measured (processing/vips.py, ``detail.measured``: a decode of the
whole source).

Before: the measure ran in the small slot first. A 24 MP WebP of noise to WebP held a
small slot 1.4 s of CPU (3 s on the loaded machine) before it was found big, and two or
three such requests at once made a cold 320x240 resize wait 2-7 s behind them."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import numpy as np
import pytest
import pyvips

from stowage.processing import chain, detail, flatness
from stowage.processing.base import BigJob
from stowage.processing.vips import VipsEngine
from tests.processing.test_cost import LIMITS


class Measured(Exception):
    """The detail measure was asked."""


def source(path: Path, width: int, height: int, seed: int) -> Path:
    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    image = pyvips.Image.new_from_array(pixels).copy(interpretation="srgb")
    options = {".png": {"compression": 1}, ".webp": {"Q": 50}}.get(path.suffix, {})
    image.write_to_file(str(path), **options)
    return path


def test_a_job_found_big_is_not_measured_in_a_small_slot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def measured(*args: object) -> float:
        raise Measured

    monkeypatch.setattr(detail, "measured", measured)
    monkeypatch.setattr(flatness, "content", measured)  # detail and flat share, one decode
    monkeypatch.setattr(flatness, "of_strips", measured)  # the same, of a chain's result
    rng = random.Random(5136)
    chains = [["output=format:webp"], ["flip", "output=format:avif"], ["output=format:gif"]]
    chains += [["sepia", "output=format:webp"], ["rotate=deg:90", "output=format:avif"]]
    engine = VipsEngine(threads_per_job=1, pillow_jpeg=False)
    for case in range(5):
        suffix = rng.choice([".png", ".webp", ".tif", ".jpg"])
        width, height = rng.randint(1500, 2200), rng.randint(1400, 2000)
        path = source(tmp_path / f"s{case}{suffix}", width, height, case)
        segments = rng.choice(chains)
        parsed = chain.parse(segments)
        output = chain.output_for(parsed, "image/png")
        dest = tmp_path / f"o{case}"
        # The chain measures its source's detail when it runs (the big job's run)...
        big_run = dataclasses.replace(LIMITS, max_cost=1000.0)
        with pytest.raises(Measured):
            engine.render(path, parsed, output, dest, big_run)
        # ...and not in the small run, which finds it big from the header alone.
        small_run = dataclasses.replace(big_run, big_cost=0.05)
        with pytest.raises(BigJob):
            engine.render(path, parsed, output, dest, small_run)
        assert not dest.exists(), (suffix, segments)
