"""Effects before a flat-priced encoder (GIF, AVIF, WebP, PNG) are priced from the flat
share of what the encoder sees, not of the source (processing/resultshare.py).

Before: ``vignette=amount:70/output=format:gif`` on a 9.3 MP screenshot was estimated
8.5 s and refused for 1.8 s of CPU (``polaroid`` 11.1 s for 1.0, ``circle`` 8.7 for
1.0, ``blur`` 7.9 for 1.5): the flat share was read from the source and kept only
through the tasks that keep it (``flatness.KEEPING``), so any other effect priced the
save as a photo's."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import numpy as np
import pytest

from stowage.config import Settings
from stowage.processing import chain, cost
from stowage.processing.base import Limits
from stowage.processing.vips import VipsEngine
from tests.processing import cpuspeed
from tests.processing.test_cost import LIMITS
from tests.processing.test_cost_flat import blocks, photo, screenshot, text

MOST = Settings().processing_max_job_cost
#: Effects that change the picture before the encoder, with options a saved URL may hold.
EFFECTS = ["vignette=amount:70", "vignette", "polaroid", "torn_edges", "shadow"]
EFFECTS += ["rounded_corners", "border=width:20", "circle", "sepia", "monochrome"]
EFFECTS += ["blackwhite", "negative", "modulate=brightness:120", "pixelate=amount:6"]
EFFECTS += ["blur=amount:2", "sharpen=amount:3", "partial_blur=objects:[[40,40,900,700]]"]
EFFECTS += ["partial_pixelate=objects:[[10,20,600,500]]", "flip", "enhance=preset:vivid"]
PICTURES = [screenshot, screenshot, blocks, text, photo]
FORMATS = ["gif", "gif", "gif", "avif", "webp", "png"]


def estimated_and_spent(
    source: Path,
    segments: list[str],
    dest: Path,
    monkeypatch: pytest.MonkeyPatch,
    limits: Limits = LIMITS,
    kind: str = "blur",
    fresh: bool = False,
) -> tuple[float, float]:
    """The engine's last estimate (the measured one) and the job's CPU time in the state
    the rates describe (``cpuspeed.speed(kind, fresh)``), the measures included, under
    ``limits``."""
    estimates: list[float] = []
    monkeypatch.setattr(cost, "check", lambda seconds, _limits: estimates.append(seconds))
    parsed = chain.parse(segments)
    output = chain.output_for(parsed, "image/png")
    run = lambda: VipsEngine(threads_per_job=1).render(source, parsed, output, dest, limits)  # noqa: E731
    spent = cpuspeed.least(run, times=1)
    if spent > 2.0:  # again when it ran long: the machine is shared
        spent = min(spent, cpuspeed.least(run, times=1))
    return estimates[-1], spent / cpuspeed.speed(kind, fresh)


@dataclasses.dataclass
class Case:
    source: Path
    segments: list[str]
    label: str  # what the picture is, for the failure's message


def judge(
    case: Case,
    quick: float,
    refused: list[str],
    under: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Adds ``case`` to ``refused`` if it was refused (over ``MOST``) though it took under
    ``quick``, to ``under`` if it took over three times its estimate (either measured
    again, with the machine's speed: cpuspeed); removes its file."""
    dest = case.source.with_name("o")
    seconds, spent = estimated_and_spent(case.source, case.segments, dest, monkeypatch)
    if (seconds > MOST and spent < quick) or seconds < spent / 3:
        again = estimated_and_spent(case.source, case.segments, dest, monkeypatch, fresh=True)
        seconds, spent = again
    found = f"{case.label}: {seconds:.2f} s, took {spent:.2f}"
    print(found, flush=True)
    if seconds > MOST and spent < quick:
        refused.append(found)
    if seconds < spent / 3:
        under.append(found)
    case.source.unlink()


def generated(
    seed: int, count: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[str], list[str]]:
    """``count`` cases from ``seed``: pictures of 3-10 MP, one or two effects, a
    flat-priced format. The cases refused though they took under half the limit, and
    those that took over three times their estimate."""
    pick, rng = random.Random(seed), np.random.default_rng(seed)
    refused, under = [], []
    for case in range(count):
        kind = pick.choice(PICTURES)
        megapixels = pick.uniform(3, 10)
        width = int((megapixels * 1e6 * pick.uniform(1.2, 1.8)) ** 0.5)
        height = int(megapixels * 1e6 / width)
        source = tmp_path / f"s{case}.png"
        kind(width, height, rng).pngsave(str(source), compression=1)
        tasks = pick.sample(EFFECTS, pick.choice([1, 1, 2]))
        segments = [*tasks, f"output=format:{pick.choice(FORMATS)}"]
        label = f"{kind.__name__} {width}x{height} {segments}"
        judge(Case(source, segments, label), MOST / 2, refused, under, monkeypatch)
    return refused, under


def test_effects_on_flat_pictures_are_priced_from_what_the_encoder_sees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """None that takes under half the limit is refused, none takes over three times its
    estimate."""
    refused, under = generated(5252, 12, tmp_path, monkeypatch)
    assert not refused and not under, (refused, under)
