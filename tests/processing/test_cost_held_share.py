"""Chains that read out of order (a turn held in memory, ``smart_crop``'s cover, the
face tasks) before a flat-priced encoder are priced from the flat share of their
result, measured on a bounded copy of the source (processing/resultcopy.py).

Before, their save was priced from the source's flat share, kept only through
``flatness.KEEPING``: ``rotate=deg:45/output=format:gif`` on a 9.4 MP screenshot was
estimated 16.1 s and refused for 2.7 s of CPU, ``polaroid=rotate:10`` 15.1 for 2.6,
``blur_faces`` 8.8 for 1.1."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from tests.processing.test_cost_effects import PICTURES, Case, judge
from tests.processing.test_cost_flat import MOST, photo

FORMATS = ["gif", "gif", "gif", "avif", "webp", "png"]


def _chain(pick: random.Random, width: int, height: int) -> list[str]:
    """One task that reads out of order, after or before a common effect at times."""
    angle = pick.choice([5, 10, 30, 45, 60, 135, 200])
    side = pick.uniform(0.3, 0.8)
    held = [
        f"rotate=deg:{angle}",
        f"rotate=deg:{angle},background:white",
        f"polaroid=rotate:{pick.choice([5, 15, 340])}",
        f"smart_crop=width:{int(width * side)},height:{int(height * side)}",
        pick.choice(["blur_faces", "pixelate_faces"]),
    ]
    tasks = [pick.choice(held)]
    if pick.random() < 0.3:
        tasks.insert(pick.randrange(2), pick.choice(["vignette", "border=width:20", "sepia"]))
    return [*tasks, f"output=format:{pick.choice(FORMATS)}"]


def generated(
    seed: int, count: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[str], list[str]]:
    """``count`` cases from ``seed``: flat pictures of 5-9 MP, photos of 1.5-3. The cases
    refused though they took under the limit, and those that took over three times their
    estimate."""
    pick, rng = random.Random(seed), np.random.default_rng(seed)
    refused, under = [], []
    for case in range(count):
        kind = pick.choice(PICTURES)
        # a photo to GIF takes 0.85 s a megapixel: smaller, for the tests' time
        megapixels = pick.uniform(1.5, 3) if kind is photo else pick.uniform(5, 9)
        width = int((megapixels * 1e6 * pick.uniform(1.2, 1.8)) ** 0.5)
        height = int(megapixels * 1e6 / width)
        source = tmp_path / f"s{case}.png"
        kind(width, height, rng).pngsave(str(source), compression=1)
        segments = _chain(pick, width, height)
        label = f"{kind.__name__} {width}x{height} {segments}"
        judge(Case(source, segments, label), MOST, refused, under, monkeypatch)
    return refused, under


def test_chains_read_out_of_order_are_priced_from_what_the_encoder_sees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """None that takes under the limit is refused, none takes over three times its
    estimate."""
    refused, under = generated(5360, 7, tmp_path, monkeypatch)
    assert not refused and not under, (refused, under)
