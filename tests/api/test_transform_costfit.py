"""``stowage_processing_cost_fit``: each job's CPU time over its estimate, measured in the
job process and counted by the server (``processing/estimates.py``), so that an operator
can see how well the cost rates fit the machine (docs/transformations.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.api.harness import Harness
from tests.api.test_transform import get, stored
from tests.processing.test_cost_saves import noise

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")
FIT = "stowage_processing_cost_fit"


def sample(text: str, suffix: str) -> float:
    found = re.search(rf"^{FIT}_{suffix} (\S+)$", text, re.M)
    return float(found.group(1)) if found else 0.0


async def counts(harness: Harness) -> tuple[float, float]:
    text = await harness.metrics()
    return sample(text, "count"), sample(text, "sum")


async def test_a_job_estimated_at_a_tenth_of_a_second_or_more_is_counted(
    harness: Harness, tmp_path: Path
) -> None:
    """A blur of 1200 x 1200 noise (estimated about 0.25 s) is counted once, at a ratio a
    machine could give; its cached answer and a thumbnail's job (estimated 0.05 s) are not."""
    source = noise(tmp_path / "noise.png", 1200, 1200, 5548)
    handle = await stored(harness, source.read_bytes(), "noise.png")
    count, total = await counts(harness)
    await get(harness, f"/blur=amount:10/{handle}")
    after, summed = await counts(harness)
    assert after == count + 1
    assert 0.05 < summed - total < 20
    await get(harness, f"/blur=amount:10/{handle}")  # the derivative, no job
    await get(harness, f"/resize=width:100/{handle}")
    assert await counts(harness) == (after, summed)


async def test_the_fit_is_exposed_before_any_job(harness: Harness) -> None:
    """Declared with the other metrics: a dashboard finds it at zero on a new node."""
    text = await harness.metrics()
    assert f"# TYPE {FIT} histogram" in text
