"""The colours measure of a chain's result (``resultshare``, before a GIF) reads it
through a line cache of ``flatness.ROWS_READ`` rows, not libvips' default of one.

A turn that the job's hold budget leaves lazy computes, for every request of its result,
the bounding box of that request in its input, and everything before it back to the
last image in memory. Read a row at a time by the measure, an upscale, a polaroid and a
22-degree turn of 500 px noise with alpha, to GIF, took 9.3 s of CPU (most of it the
measure), estimated at 4.3 s; read 64 rows at a time, 1.1 s."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.processing.test_cost_effects import estimated_and_spent
from tests.processing.test_cost_holds import limits, noise_jpeg, noise_rgba


def _grown_turned(pick: random.Random) -> list[str]:
    angle = pick.choice([pick.randint(10, 80), pick.randint(280, 350)])
    turn = pick.choice([f"rotate=deg:{angle}", f"polaroid=rotate:{angle}"])
    between = pick.choice([[], ["monochrome"], ["sepia"]])
    return ["upscale", *between, turn, "output=format:gif"]


@pytest.mark.parametrize("seed", [5550])
def test_a_lazy_turn_is_measured_many_rows_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """Noise upscaled, then turned, to GIF, with a budget of four sources' pixels (the
    upscale's size: the turn's bounding box is larger, so the turn is lazy): the job's CPU
    time within its estimate. Read a row at a time, the measure alone took more."""
    pick = random.Random(seed)
    for case in range(4):
        side = pick.randint(420, 520)
        maker, suffix = (noise_jpeg, "jpg") if case % 2 else (noise_rgba, "png")
        source = maker(tmp_path / f"s{case}.{suffix}", side, seed + case)
        segments = _grown_turned(pick)
        budget = limits(4 * side * side)
        seconds, spent = estimated_and_spent(source, segments, tmp_path / "o", monkeypatch, budget)
        print(f"{side} px {suffix} {segments}: estimated {seconds:.2f} s, took {spent:.2f}")
        assert spent <= seconds, (side, suffix, segments, seconds, spent)
