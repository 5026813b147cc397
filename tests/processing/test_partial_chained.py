"""partial_pixelate and partial_blur read their input again for every box: the engine
holds that input (``TaskSpec.measures``), so a chain of them costs the sum of its tasks.

Found by probing (seeds 9711, 9713): each box of a ``partial_pixelate`` cuts its region
from the task's input and blurs it, so with the input left lazy every box computed the
tasks before it again over its region and the blur's margin. Three of them with 50
boxes on a 200x200 PNG took 29 s of CPU (1: 0.45 s, 2: 6.3 s), estimated 0.024 s: a
small job that held a small slot 5 s, then the big slot to the deadline. Held: 1.3 s."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import pyvips

from stowage.processing import catalogue, chain, cost
from stowage.processing.vips import VipsEngine
from tests.processing import cpuspeed
from tests.processing.test_cost import LIMITS, opened_for


def boxes(seed: int, side: int) -> str:
    rng = random.Random(seed)
    listed = []
    for _ in range(50):
        x, y = rng.randint(0, side - 10), rng.randint(0, side - 10)
        listed.append(f"[{x},{y},{rng.randint(1, side)},{rng.randint(1, side)}]")
    return "objects:[" + ",".join(listed) + "]"


@pytest.fixture(scope="module")
def flat(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("partial") / "flat.png"
    colour = pyvips.Image.black(200, 200, bands=3).linear([1, 1, 1], [10, 120, 200])
    colour.cast("uchar").copy(interpretation="srgb").pngsave(str(source))
    return source


def spent(source: Path, segments: list[str], dest: Path) -> float:
    parsed = chain.parse(segments)
    output = chain.output_for(parsed, "image/png")
    engine = VipsEngine(threads_per_job=1)
    return cpuspeed.least(lambda: engine.render(source, parsed, output, dest, LIMITS), times=1)


def test_partial_tasks_hold_their_input() -> None:
    assert catalogue.TABLE["partial_pixelate"].measures
    assert catalogue.TABLE["partial_blur"].measures


@pytest.mark.parametrize("seed", [9711, 9712])
def test_chained_partial_pixelates_cost_their_sum(flat: Path, tmp_path: Path, seed: int) -> None:
    task = f"partial_pixelate={boxes(seed, 200)},type:rect,blur:18"
    one = spent(flat, [task], tmp_path / "one.png")
    three = spent(flat, [task, task, task], tmp_path / "three.png")
    # linear: about three times one (1.3 s for 0.45-0.58 measured), not 29 s
    assert three < 6 * one + 0.5, (one, three)


@pytest.mark.parametrize(
    ("task", "seed"), [("partial_pixelate", 5380), ("partial_blur", 5381), ("partial_blur", 5382)]
)
def test_each_box_is_priced(flat: Path, tmp_path: Path, task: str, seed: int) -> None:
    """A box is cut, changed and inserted by a pipeline of its own: 32 tasks of 50 boxes
    on 200x200 took 12.4 s, estimated at 0.2 s (seed 9711), in a small job's slot."""
    segments = [f"{task}={boxes(seed, 200)},type:oval,blur:18"]
    _, estimated = opened_for(flat, segments, "image/png")
    taken = spent(flat, segments, tmp_path / "out.png")
    assert taken < 3 * estimated, (taken, estimated)
    _, sixteen = opened_for(flat, segments * 16, "image/png")
    assert sixteen > 16 * 50 * cost.PER_BOX[task], sixteen
