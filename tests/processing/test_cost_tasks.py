"""Every image task, with generated options, is estimated (processing/cost.py) near the
CPU time it takes on a source of noise, the slowest content to filter and to save.

A task estimated far below its cost is not refused when it should be, nor run as a big
job: before this test, a 7000x7000 PNG of noise held a job slot 10-24 s through
``sepia``, ``enhance`` or ``rounded_corners=radius:max,blur:20``, each estimated at a
third or less of its time (face tasks at a tenth: their search costs the same on any
size)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import pyvips
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stowage import errors
from stowage.processing import chain, cost, frames
from stowage.processing.base import _text
from stowage.processing.table import Kind, TaskSpec
from stowage.processing.vips import VipsEngine
from tests.processing.test_catalogue import SPECS, inside
from tests.processing.test_cost import LIMITS

#: Tasks whose generated options rarely make a valid chain alone, or that are not
#: pixels of their own (``urlscreenshot`` takes a URL): given fixed options here.
FIXED = {
    "crop": "dim:[10,10,500,400]",
    "resize": "width:700",
    "smart_crop": "width:300,height:300",
    "partial_blur": "objects:[[0,0,600,500]]",
    "partial_pixelate": "objects:[[0,0,600,500]]",
}
TASKS = [s for s in SPECS if s.kind is Kind.IMAGE and s.name not in ("urlscreenshot", "ascii")]
SLACK = 0.3  # seconds: a job's fixed costs (opening, the face model's first load)


@pytest.fixture(scope="module")
def noise(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("noise") / "noise.png"
    grey = pyvips.Image.gaussnoise(1000, 800, sigma=60, mean=128, seed=7)
    rgb = grey.bandjoin([grey.flip("horizontal"), grey.flip("vertical")]).cast("uchar")
    rgb.copy(interpretation="srgb").pngsave(str(source), compression=1)
    return source


@pytest.mark.parametrize("spec", TASKS, ids=lambda spec: spec.name)
@settings(
    max_examples=2, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data(), fmt=st.sampled_from(["png", "jpg"]))
def test_no_task_takes_much_longer_than_estimated(
    noise: Path, spec: TaskSpec, data: st.DataObject, fmt: str
) -> None:
    options = FIXED.get(spec.name) or ",".join(
        f"{param.name}:{_text(data.draw(inside(param.check)))}"
        for param in spec.params
        if data.draw(st.booleans())
    )
    segments = [spec.name + (f"={options}" if options else ""), f"output=format:{fmt}"]
    try:
        parsed = chain.parse(segments)
    except errors.StowageError:
        return  # options the task refuses together: a 400 before any estimate
    output = chain.output_for(parsed, "image/png")
    opened = frames.open_source(str(noise), parsed, output, LIMITS, "random")
    estimated = cost.estimate(opened, parsed, opened.image.width, output.format)
    started = time.process_time()
    try:
        VipsEngine(threads_per_job=1).render(noise, parsed, output, noise.with_suffix(".o"), LIMITS)
    except errors.StowageError:
        return  # refused while running (a size it cannot make): no time to compare
    spent = time.process_time() - started
    print(f"{segments}: estimated {estimated:.2f} s, took {spent:.2f} s")
    assert spent < 3 * estimated + SLACK, (segments, estimated, spent)
