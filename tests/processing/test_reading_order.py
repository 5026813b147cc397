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
from stowage.processing import chain, composite
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


# --- the extra sources of watermark and collage ---------------------------------------------

EXTRA = "E" * 20
FOLLOWING = [s for s in SPECS if s.kind is Kind.IMAGE and s.name not in composite.BUILT]


@pytest.fixture(scope="module")
def tall(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A photo and a tall PNG (a decoder that reads only forwards) to put on it."""
    folder = tmp_path_factory.mktemp("extra")
    grey = pyvips.Image.gaussnoise(300, 2400, sigma=50, mean=128).cast("uchar")
    grey.bandjoin([grey.flip("horizontal"), grey.flip("vertical")]).pngsave(
        str(folder / "tall.png")
    )
    grey.rot90().crop(0, 0, 800, 300).resize(1, vscale=2).pngsave(str(folder / "photo.png"))
    return folder / "photo.png", folder / "tall.png"


@pytest.mark.parametrize("first", ["watermark", "collage"])
@pytest.mark.parametrize("spec", FOLLOWING, ids=lambda spec: spec.name)
@settings(
    max_examples=2, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_a_task_after_a_watermark_or_collage_reads_their_sources_in_any_order(
    spec: TaskSpec, data: st.DataObject, first: str, tall: tuple[Path, Path], tmp_path: Path
) -> None:
    """``flip``, a rotation or ``enhance`` after a tall watermark failed 422 INVALID_IMAGE:
    the extra source was read in one pass and the task read it again from the top."""
    made = {
        "watermark": f"watermark=file:{EXTRA}",
        "collage": f"collage=files:[{EXTRA}],width:400,height:400",
    }
    needed = [param for param in spec.params if param.name in spec.needs_one_of]
    options = [
        f"{param.name}:{_text(data.draw(inside(param.check)))}"
        for param in spec.params
        if param in needed[:1] or data.draw(st.booleans())
    ]
    source, extra = tall
    try:
        parsed = chain.parse(
            [made[first], spec.name + ("=" + ",".join(options) if options else "")]
        )
        output = chain.output_for(parsed, "image/png")
        with composite.using(((EXTRA, extra),), LIMITS):
            VipsEngine(threads_per_job=1).render(source, parsed, output, tmp_path / "o", LIMITS)
    except errors.StowageError as exc:
        assert exc.status != 422 or exc.code != "INVALID_IMAGE", (first, spec.name, str(exc))


# --- a first resize (shrink-on-load) before a task that reads out of order -------------------

RANDOM = [s for s in SPECS if s.kind is Kind.IMAGE and s.random_access]


@pytest.fixture(scope="module")
def jpeg_and_png(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("shrunk")
    grey = pyvips.Image.gaussnoise(160, 120, sigma=50, mean=128).resize(5).cast("uchar")
    photo = grey.bandjoin([grey.flip("horizontal"), grey.flip("vertical")])
    photo.jpegsave(str(folder / "photo.jpg"))
    photo.pngsave(str(folder / "photo.png"))
    return folder / "photo.jpg", folder / "photo.png"


@pytest.mark.parametrize("spec", RANDOM, ids=lambda spec: spec.name)
@settings(
    max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data(), width=st.integers(20, 700), png=st.booleans())
def test_a_task_out_of_order_after_a_first_resize(
    spec: TaskSpec,
    data: st.DataObject,
    width: int,
    png: bool,
    jpeg_and_png: tuple[Path, Path],
    tmp_path: Path,
) -> None:
    """A first ``resize`` shrinks on load, which reads the file in one pass: ``enhance``
    after it (it measures the image, then changes it) failed 422 INVALID_IMAGE."""
    needed = [param for param in spec.params if param.name in spec.needs_one_of]
    options = [
        f"{param.name}:{_text(data.draw(inside(param.check)))}"
        for param in spec.params
        if param in needed[:1] or data.draw(st.booleans())
    ]
    source = jpeg_and_png[1 if png else 0]
    try:
        task = spec.name + ("=" + ",".join(options) if options else "")
        parsed = chain.parse([f"resize=width:{width}", task])
        output = chain.output_for(parsed, "image/jpeg")
        VipsEngine(threads_per_job=1).render(source, parsed, output, tmp_path / "o", LIMITS)
    except errors.StowageError as exc:
        assert exc.status != 422 or exc.code != "INVALID_IMAGE", (spec.name, options, str(exc))


# --- a watermark's mark, read by the savers in tiles -----------------------------------------


@pytest.fixture(scope="module")
def photo_and_marks(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A 640x480 photo, and a 300x200 PNG and JPEG to put on it."""
    folder = tmp_path_factory.mktemp("marks")
    grey = pyvips.Image.gaussnoise(160, 120, sigma=50, mean=128).resize(4).cast("uchar")
    grey.bandjoin([grey.flip("horizontal"), grey.flip("vertical")]).jpegsave(
        str(folder / "photo.jpg")
    )
    mark = grey.crop(0, 0, 300, 200)
    mark.bandjoin([mark, mark, mark.flip("vertical")]).pngsave(str(folder / "mark.png"))
    mark.jpegsave(str(folder / "mark.jpg"))
    return folder / "photo.jpg", folder / "mark.png", folder / "mark.jpg"


@pytest.mark.parametrize("saved", ["webp", "png", "gif"])
@pytest.mark.parametrize("before", ["resize=width:1600", "border=width:900"])
@pytest.mark.parametrize("mark", [1, 2], ids=["png", "jpeg"])
def test_a_watermark_on_a_large_result_is_read_in_any_order(
    saved: str, before: str, mark: int, photo_and_marks: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    """``resize=w:1600/watermark=file:H/output=format:webp`` was a 422 INVALID_IMAGE
    ("vipspng: out of order read at line 144"): the mark was opened for one pass from its
    top and the WebP, PNG and GIF savers asked for its rows in another order."""
    parsed = chain.parse([before, f"watermark=file:{EXTRA}", f"output=format:{saved}"])
    output = chain.output_for(parsed, "image/jpeg")
    with composite.using(((EXTRA, photo_and_marks[mark]),), LIMITS):
        made = VipsEngine().render(photo_and_marks[0], parsed, output, tmp_path / "o", LIMITS)
    assert made.width >= 1600
