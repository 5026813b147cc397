"""A task that reads its image out of order must say so (``random_access``): the engine
otherwise opens the source for one pass from top to bottom, and libvips refuses a read
far behind it ("out of order read"), a 422 for a good photo. ``shadow`` read the image
and its shadow up to 1000 rows apart and failed so on any photo taller than that."""

from __future__ import annotations

from pathlib import Path

import pytest
import pyvips
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stowage import errors
from stowage.processing import chain
from stowage.processing.base import Limits, _text
from stowage.processing.table import Kind, TaskSpec
from stowage.processing.vips import VipsEngine
from tests.processing.test_catalogue import SPECS, inside

LIMITS = Limits(10**9, 10**10, 10_000, 120, max_frames=10**5, max_total_pixels=10**10)
SEQUENTIAL = [s for s in SPECS if s.kind is Kind.IMAGE and not s.random_access]


@pytest.fixture(scope="module")
def photo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("order") / "photo.jpg"
    grey = pyvips.Image.gaussnoise(200, 150, sigma=50, mean=128).resize(10).cast("uchar")
    grey.bandjoin([grey.flip("horizontal"), grey.flip("vertical")]).jpegsave(str(path))
    return path


def test_a_shadow_far_below_a_photo(photo: Path, tmp_path: Path) -> None:
    parsed = chain.parse(["shadow=vector:[0,1000],blur:0"])
    output = chain.output_for(parsed, "image/jpeg")
    made = VipsEngine(threads_per_job=1).render(photo, parsed, output, tmp_path / "o", LIMITS)
    assert (made.width, made.height) == (2000, 2500)


@pytest.mark.parametrize("spec", SEQUENTIAL, ids=lambda spec: spec.name)
@settings(
    max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_a_task_read_in_one_pass_never_reads_behind(
    spec: TaskSpec, data: st.DataObject, photo: Path, tmp_path: Path
) -> None:
    options = [
        f"{param.name}:{_text(data.draw(inside(param.check)))}"
        for param in spec.params
        if data.draw(st.booleans())
    ]
    try:
        parsed = chain.parse([spec.name + ("=" + ",".join(options) if options else "")])
        output = chain.output_for(parsed, "image/jpeg")
        VipsEngine(threads_per_job=1).render(photo, parsed, output, tmp_path / "o", LIMITS)
    except errors.StowageError as exc:
        assert exc.status != 422 or exc.code != "INVALID_IMAGE", (spec.name, options, str(exc))
