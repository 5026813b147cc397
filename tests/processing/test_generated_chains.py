"""Chains of one to three image tasks, each with generated options, on sources of every
shape the engine meets (a photo, RGBA, one pixel, 16 bits, an animation, CMYK): each is
rendered or refused with a 4xx of the error hierarchy, and a good source is never
"invalid" (an out-of-order read, a crash in an operation). A document format asked of an
image is a 400 here too (the service sends documents to LibreOffice first). Refusals are
expected (options that conflict, a size past a limit); anything else fails."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import pytest
import pyvips
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from stowage import errors
from stowage.processing import chain, composite
from stowage.processing.base import Limits, _text
from stowage.processing.table import Kind, TaskSpec
from stowage.processing.vips import VipsEngine
from tests.processing.test_catalogue import SPECS, inside
from tests.processing.test_faces import ASTRONAUT

LIMITS = Limits(10**8, 10**9, 10_000, 60, max_cost=8.0)
TASKS = [s for s in SPECS if s.kind in (Kind.IMAGE, Kind.SAVE, Kind.ANSWER)]
SOURCES = ["photo.jpg", "alpha.png", "dot.png", "deep.png", "anim.gif", "cmyk.jpg"]


def _sources(folder: Path) -> dict[str, tuple[Path, str]]:
    grey = pyvips.Image.gaussnoise(64, 48, sigma=40, mean=128, seed=2).cast("uchar")
    rgb = grey.bandjoin([grey.flip("horizontal"), grey.flip("vertical")])
    frames = pyvips.Image.arrayjoin(
        [rgb.linear(1, 20 * i).cast("uchar") for i in range(3)], across=1
    )
    frames = frames.copy()
    frames.set_type(pyvips.GValue.gint_type, "page-height", 48)
    made = {
        "photo.jpg": (rgb.jpegsave, "image/jpeg"),
        "alpha.png": (rgb.bandjoin(grey).pngsave, "image/png"),
        "dot.png": (grey.crop(0, 0, 1, 1).pngsave, "image/png"),
        "deep.png": (grey.cast("ushort").linear(256, 0).cast("ushort").pngsave, "image/png"),
        "anim.gif": (frames.gifsave, "image/gif"),
        "cmyk.jpg": (rgb.colourspace("cmyk").jpegsave, "image/jpeg"),
    }
    found = {}
    for name, (save, mimetype) in made.items():
        save(str(folder / name))
        found[name] = (folder / name, mimetype)
    return found


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    return _sources(tmp_path_factory.mktemp("sources"))


@st.composite
def segments(draw: st.DrawFn, tasks: Sequence[TaskSpec] = TASKS, most: int = 3) -> list[str]:
    """One to ``most`` of ``tasks``, each with generated options."""
    found = []
    for spec in draw(st.lists(st.sampled_from(tasks), min_size=1, max_size=most)):
        options = [
            f"{p.name}:{_text(draw(inside(p.check)))}" for p in spec.params if draw(st.booleans())
        ]
        found.append(spec.name + ("=" + ",".join(options) if options else ""))
    return found


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(chosen=segments(), name=st.sampled_from(SOURCES))
def test_a_generated_chain_is_rendered_or_refused_with_a_client_error(
    sources: dict[str, tuple[Path, str]], tmp_path: Path, chosen: list[str], name: str
) -> None:
    source, mimetype = sources[name]
    try:
        parsed = chain.parse(chosen)
        output = chain.output_for(parsed, mimetype)
        dest = tmp_path / f"out.{output.extension}"
        VipsEngine(threads_per_job=1).render(source, parsed, output, dest, LIMITS)
    except errors.StowageError as exc:
        assert 400 <= exc.status < 500, (chosen, name, exc.code, str(exc))
        assert exc.code != "INVALID_IMAGE", (chosen, name, str(exc))
        return
    assert dest.stat().st_size > 0, (chosen, name)


# PNGs (their decoder reads only forwards) and files for watermark and collage: the
# chains SDK-built URLs make, where the order of reads matters (a collage's cells, a
# watermark under flip or enhance, a first resize before a task that measures).
EXTRA = "X" * 20
COMPOSED = [f"watermark=file:{EXTRA}", f"collage=files:[{EXTRA}],width:600,height:600"]


@pytest.fixture(scope="module")
def pngs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A wide PNG to transform and a tall one to place on it (shrunk about 1/3)."""
    folder = tmp_path_factory.mktemp("pngs")
    for name, (width, height) in {"wide.png": (800, 600), "tall.png": (300, 2400)}.items():
        grey = pyvips.Image.gaussnoise(width, height, sigma=40, mean=128, seed=3).cast("uchar")
        grey.bandjoin([grey.flip("horizontal"), grey.flip("vertical")]).pngsave(str(folder / name))
    return folder / "wide.png", folder / "tall.png"


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(chosen=segments(), composed=st.sampled_from([None, *COMPOSED]), at=st.integers(0, 3))
def test_a_generated_chain_on_a_png_with_other_files(
    pngs: tuple[Path, Path], tmp_path: Path, chosen: list[str], composed: str | None, at: int
) -> None:
    main, tall = pngs
    if composed is not None:
        chosen.insert(min(at, len(chosen)), composed)
    try:
        parsed = chain.parse(chosen)
        output = chain.output_for(parsed, "image/png")
        with composite.using(((EXTRA, tall),), LIMITS, 0, tmp_path / "out"):
            dest = tmp_path / f"out.{output.extension}"
            VipsEngine(threads_per_job=1).render(main, parsed, output, dest, LIMITS)
    except errors.StowageError as exc:
        assert 400 <= exc.status < 500, (chosen, exc.code, str(exc))
        assert exc.code != "INVALID_IMAGE", (chosen, str(exc))
        return
    assert dest.stat().st_size > 0, chosen


@pytest.fixture(scope="module")
def turned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """One wide photo with a face, saved twice: untagged, and tagged EXIF orientation 6
    (turn right). A turn shows in the size, and the face makes the face tasks cut."""
    photo = pyvips.Image.new_from_file(str(ASTRONAUT)).extract_area(0, 0, 512, 300)
    return _tagged_twice(tmp_path_factory.mktemp("turned"), photo)


@pytest.fixture(scope="module")
def faceless(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The same, of a picture without a face (noise): for the chains that look for faces."""
    grey = pyvips.Image.gaussnoise(512, 300, sigma=40, mean=128, seed=4).cast("uchar")
    photo = grey.bandjoin([grey.flip("horizontal"), grey.flip("vertical")])
    return _tagged_twice(tmp_path_factory.mktemp("faceless"), photo)


#: Tasks that look for faces. Faces are looked for in the picture as its tag shows it
#: (a photo stored on its side, tag 6, had none found): the photo above tagged 6 shows
#: its face on its side, where the same pixels untagged show it upright, so its faces are
#: not the untagged one's. These chains are compared on a picture without a face;
#: tests/processing/test_faces_turned.py checks their cuts on photos stored turned.
FINDS_FACES = {"detect_faces", "crop_faces", "pixelate_faces", "blur_faces", "redeye"}


def _pair(
    chosen: list[str], turned: tuple[Path, Path], faceless: tuple[Path, Path]
) -> tuple[Path, Path]:
    finds = any(
        segment.split("=")[0] in FINDS_FACES
        or segment.startswith("smart_crop")
        or "align:faces" in segment
        for segment in chosen
    )
    return faceless if finds else turned


def _tagged_twice(folder: Path, photo: pyvips.Image) -> tuple[Path, Path]:
    found = []
    for orientation in (1, 6):
        tagged = photo.copy()
        tagged.set_type(pyvips.GValue.gint_type, "orientation", orientation)
        tagged.jpegsave(str(folder / f"o{orientation}.jpg"), Q=95)
        found.append(folder / f"o{orientation}.jpg")
    return found[0], found[1]


def _made(
    source: Path, chosen: list[str], dest: Path, other: Path | None = None
) -> pyvips.Image | None:
    """The rendered image, ``other`` being the file ``X...`` that tasks name (None for a
    refusal, or for an answer that is no image: metadata, detect_faces' JSON...)."""
    try:
        parsed = chain.parse(chosen)
        output = chain.output_for(parsed, "image/jpeg")
        dest = dest.with_suffix(f".{output.extension}")
        with composite.using(((EXTRA, other or source),), LIMITS, 0, dest):
            VipsEngine(threads_per_job=1).render(source, parsed, output, dest, LIMITS)
    except errors.StowageError:
        return None
    try:
        return pyvips.Image.new_from_file(str(dest), access="sequential").copy_memory()
    except pyvips.Error:
        return None


def _same_pixels(tagged: pyvips.Image | None, upright: pyvips.Image | None, chosen: object) -> None:
    if upright is None or tagged is None:
        assert (upright is None) is (tagged is None), chosen
        return
    shape = (tagged.width, tagged.height, tagged.bands)
    assert shape == (upright.width, upright.height, upright.bands), chosen
    assert (tagged - upright).abs().max() <= 2, chosen


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(chosen=segments())
def test_no_task_turns_the_image_by_its_exif_orientation_unless_asked(
    turned: tuple[Path, Path], faceless: tuple[Path, Path], tmp_path: Path, chosen: list[str]
) -> None:
    """The pixels are never turned upright (the orientation is kept for viewers) except by
    ``rotate=deg:exif``: a source tagged orientation 6 gives the same pixels as the same
    source untagged, whatever the chain."""
    assume(not any("exif" in segment for segment in chosen))
    # An AVIF keeps the orientation as its irot, which libheif applies when it reads the
    # file back: read so, the tagged source's result is turned as a viewer shows it.
    assume(_avif_not_asked(chosen))
    plain, tagged = _pair(chosen, turned, faceless)
    upright = _made(plain, chosen, tmp_path / "upright")
    _same_pixels(_made(tagged, chosen, tmp_path / "tagged"), upright, chosen)


def _avif_not_asked(chosen: list[str]) -> bool:
    try:
        return chain.output_for(chain.parse(chosen), "image/jpeg").format != "avif"
    except errors.StowageError:
        return True  # refused: the test reads the refusal as it is


#: Every place that scales an image mid-chain, first in the chain and after another task
#: (libvips' ``thumbnail_image`` turned the image by its tag: smart_crop after a flip
#: squeezed the turned photo into the untagged size).
SCALING = [
    "smart_crop=width:60",
    "smart_crop=width:60,height:40",
    "smart_crop=width:60,height:40,mode:face",
    "crop_faces=width:60,height:60",
    "crop_faces=width:60",
    "crop_faces=height:60",
    "resize=width:60",
    "resize=width:60,height:60,fit:crop,align:faces",
    "enhance",
    "collage=files:[X],width:300,height:300",
    "collage=files:[X],width:300,height:300,fit:crop",
]


@pytest.mark.parametrize("after", [None, "flip"])
@pytest.mark.parametrize("task", SCALING)
def test_a_scaling_task_keeps_the_pixels_as_stored(
    turned: tuple[Path, Path],
    faceless: tuple[Path, Path],
    tmp_path: Path,
    task: str,
    after: str | None,
) -> None:
    chosen = [*([after] if after else []), task.replace("[X]", f"[{EXTRA}]")]
    plain, tagged = _pair(chosen, turned, faceless)
    upright = _made(plain, chosen, tmp_path / "upright")
    assert upright is not None, chosen
    _same_pixels(_made(tagged, chosen, tmp_path / "tagged"), upright, chosen)


@pytest.mark.parametrize(
    "task", [f"watermark=file:{EXTRA},size:50", f"collage=files:[{EXTRA}],width:300,height:300"]
)
def test_another_file_is_placed_as_stored(
    turned: tuple[Path, Path], tmp_path: Path, task: str
) -> None:
    """A watermark or a collage cell from a file tagged orientation 6 is placed as stored,
    as the main image is (collage's ``autorotate:true`` turns them)."""
    upright = _made(turned[0], [task], tmp_path / "upright", turned[0])
    assert upright is not None
    _same_pixels(_made(turned[0], [task], tmp_path / "tagged", turned[1]), upright, task)


#: Every spelling of "no metadata", and a chain that keeps it.
STRIPS = ["output=strip:true", "no_metadata", "compress=metadata:true", "pjpg=metadata:false"]


@pytest.mark.parametrize("fmt", ["jpg", "png", "webp", "avif", "tiff", "gif"])
def test_a_result_shows_as_its_size_says_stripped_or_tagged(tmp_path: Path, fmt: str) -> None:
    """A decoder shows a stripped result as stored, the size ``imagesize`` reports (an
    AVIF kept the orientation as an irot box without its Exif: shown on its side); kept,
    the orientation turns it for every format that holds one, AVIF's irot as the others'
    tag (GIF holds none)."""
    pick = random.Random(fmt)
    for orientation in range(2, 9):
        width, height = pick.randrange(20, 90), pick.randrange(20, 90)
        source = tmp_path / f"o{orientation}.jpg"
        tagged = pyvips.Image.gaussnoise(width, height, seed=orientation).cast("uchar").copy()
        tagged.set_type(pyvips.GValue.gint_type, "orientation", orientation)
        tagged.jpegsave(str(source))
        turned = (height, width) if orientation >= 5 else (width, height)
        for strip in [*STRIPS, None]:
            if strip == "pjpg=metadata:false" and fmt != "jpg":
                continue
            segments = [s for s in (strip, f"output=format:{fmt}") if s is not None]
            parsed = chain.parse(segments)
            output = chain.output_for(parsed, "image/jpeg")
            dest = tmp_path / f"out.{output.extension}"
            made = VipsEngine(threads_per_job=1).render(source, parsed, output, dest, LIMITS)
            shown = pyvips.Image.new_from_file(str(dest)).autorot()  # as a viewer shows it
            stored = (made.width, made.height)
            wanted = stored if strip is not None or fmt == "gif" else turned
            assert stored == (width, height), segments
            assert (shown.width, shown.height) == wanted, (segments, orientation)
