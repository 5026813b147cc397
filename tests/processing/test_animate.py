"""``animate`` as the engine renders it (processing/composite.py, montage.py): the frames
are the listed files, one frame of each, at one size; the cost estimate, the limits, the
result's format and its metadata follow those frames."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
import pyvips
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from stowage import errors
from stowage.processing import chain, composite, cost, frames, saverates
from stowage.processing.base import Limits
from stowage.processing.vips import VipsEngine
from tests.processing.test_composite import BLUE, GREEN, RED, colour, plain
from tests.processing.test_frames import COLOURS, animation

LIMITS = Limits(50_000_000, 10**9, 4000, 20, max_total_pixels=5_000_000)
GENERATED = settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def named(paths: list[Path]) -> tuple[tuple[str, Path], ...]:
    return tuple((f"{index:020d}", path) for index, path in enumerate(paths))


def render(
    tmp: Path,
    listed: list[Path],
    segments: list[str],
    limits: Limits = LIMITS,
    mimetype: str = "image/png",
) -> tuple[Path, Any]:
    """The list rendered as the service does (``made_output``): the result's file and
    its output."""
    parsed = chain.parse(segments)
    output = chain.made_output(parsed, mimetype)
    dest = tmp / f"out.{output.extension}"
    with composite.using(named(listed), limits, len(listed), dest):
        VipsEngine().render(listed[0], parsed, output, dest, limits)
    return dest, output


def frames_of(dest: Path) -> pyvips.Image:
    return pyvips.Image.new_from_file(str(dest), n=-1)


class Estimated(Exception):
    pass


def estimate(
    tmp: Path, listed: list[Path], segments: list[str], monkeypatch: pytest.MonkeyPatch
) -> float:
    """The engine's estimate for the list, caught where it is checked (nothing renders)."""
    seen: list[float] = []

    def caught(seconds: float, limits: Limits) -> None:
        seen.append(seconds)
        raise Estimated

    monkeypatch.setattr(cost, "check", caught)
    with pytest.raises(Estimated):
        render(tmp, listed, segments, Limits(10**9, 10**10, 10_000, 60, max_total_pixels=10**10))
    return seen[0]


def proportional(asked: str, width: int, height: int) -> tuple[int, int]:
    """The documented frame: the sides asked for, one alone keeping the first image's
    proportion as ``resize`` keeps it, which is as libvips sizes it (half up in its
    arithmetic: a 366x25 image at ``width:183`` is 12.5 rows, 13; Python's ``round`` made
    it 12; 40x310 at ``width:98``, 759.5 rows exactly, is 759), else the first image's
    size."""
    sides = dict(option.split(":") for option in asked.split(",") if option)
    if "width" in sides and "height" in sides:
        return int(sides["width"]), int(sides["height"])
    if "width" in sides or "height" in sides:
        want_w, want_h = int(sides.get("width", 10**6)), int(sides.get("height", 10**6))
        made = pyvips.Image.black(width, height).thumbnail_image(want_w, height=want_h)
        return made.width, made.height
    return width, height


# -- the estimate and the limits follow the result's frames ---------------------------------
@GENERATED
@given(
    sizes=st.lists(st.tuples(st.integers(20, 900), st.integers(20, 900)), min_size=1, max_size=6),
    asked=st.sampled_from(["", "width:{w}", "height:{h}", "width:{w},height:{h}"]),
    side=st.integers(20, 1800),
    fmt=st.sampled_from(["gif", "webp"]),
)
def test_the_estimate_counts_a_frame_for_each_listed_file(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    sizes: list[tuple[int, int]],
    asked: str,
    side: int,
    fmt: str,
) -> None:
    """Each listed file is a frame of the frame's size, saved: the estimate grows with
    the list (it counted the first file's frames, one for a still, whatever the list)."""
    paths = [plain(tmp_path / f"{i}.png", w, h, RED) for i, (w, h) in enumerate(sizes)]
    task = "animate" + ("=" + asked.format(w=side, h=side) if asked else "")
    segments = [task, f"output=format:{fmt}"]
    width, height = proportional(asked.format(w=side, h=side), *sizes[0])
    saved = saverates.SAVE[fmt] * width * height / 1e6 + saverates.SAVE_FRAME.get(fmt, 0.0)
    found = [estimate(tmp_path, paths[:n], segments, monkeypatch) for n in range(1, len(paths) + 1)]
    for n, seconds in enumerate(found, start=1):
        assert seconds >= n * saved, (n, seconds, saved)
    assert found == sorted(found) and len(set(found)) == len(found)


@GENERATED
@given(count=st.integers(2, 12), side=st.integers(20, 200), at=st.integers(0, 2))
def test_a_listed_animation_is_one_frame(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int, side: int, at: int
) -> None:
    """An animated GIF is one frame of an animation wherever it is listed: listed first
    it was estimated and limited with all its frames (``/animate/[G300,H]`` refused as
    too costly, ``/animate/[H,G300]`` 10 ms)."""
    gif = animation(tmp_path / "g.gif", side, side, count)
    still = plain(tmp_path / "h.png", side, side, BLUE)
    listed = [still, still]
    listed.insert(at, gif)
    animate = chain.parse(["animate"])
    output = chain.made_output(animate, "image/gif")
    opened = frames.open_source(str(gif), animate, output, LIMITS, "sequential")
    assert (opened.frames, opened.decoded_frames) == (1, 1)
    seconds = estimate(tmp_path, listed, ["animate"], monkeypatch)
    assert seconds == estimate(tmp_path, [still, still, still], ["animate"], monkeypatch)


@pytest.mark.parametrize(
    "segments",
    [["animate"], ["animate=width:40"], [f"collage=files:[{'0' * 19}1],width:200,height:100"]],
)
def test_the_limits_count_one_frame_of_an_animation(tmp_path: Path, segments: list[str]) -> None:
    """A GIF of more frames, and more pixels in them, than the limits allow is one frame
    of an animation or of a collage: ``/animate/G``, ``/animate/[G,H]`` and a collage of
    G were refused as too large, the same GIF listed second was not."""
    gif = animation(tmp_path / "g.gif", 100, 100, 12)
    tight = Limits(50_000_000, 10**9, 4000, 20, max_frames=11, max_total_pixels=100_000)
    still = plain(tmp_path / "h.png", 100, 100, BLUE)
    collage = segments[0].startswith("collage")
    for listed in ([gif, still],) if collage else ([gif], [gif, still]):
        dest, _ = render(tmp_path, listed, segments, tight, "image/gif")
        made = frames_of(dest)
        pages = made.get("n-pages") if made.get_typeof("n-pages") else 1
        assert pages == (1 if collage else len(listed))
        if not collage:  # the GIF's first frame, its right half plain
            got = colour(made, made.width * 3 // 4, 10)
            assert all(abs(a - b) < 40 for a, b in zip(got, COLOURS[0], strict=True)), got


def test_a_list_too_costly_is_refused_before_it_renders(tmp_path: Path) -> None:
    """16 frames of 1800 x 1800 are about 26 s of GIF palettes: refused from the headers
    (the first file's single frame was all the estimate counted, and the job ran to its
    deadline)."""
    paths = [plain(tmp_path / f"{i}.png", 800, 600, COLOURS[i % 5]) for i in range(16)]
    limits = Limits(50_000_000, 10**9, 4000, 30, max_total_pixels=10**9, max_cost=8, big_cost=1)
    with pytest.raises(errors.ProcessingTooCostly) as refused:
        render(tmp_path, paths, ["animate=width:1800,height:1800"], limits)
    assert refused.value.details["estimated_seconds"] > 8
    assert not (tmp_path / "out.gif").exists()


# -- the frame's size ------------------------------------------------------------------------
@GENERATED
@given(
    size=st.tuples(st.integers(25, 400), st.integers(25, 400)),
    side=st.integers(1, 200),
    by=st.sampled_from(["width", "height"]),
)
@example(size=(366, 25), side=183, by="width")  # 12.5 rows: half up, 13
@example(size=(48, 372), side=98, by="width")  # 759.5 rows: 760 as libvips multiplies
@example(size=(40, 310), side=98, by="width")  # 759.5 rows: 759 in its arithmetic
def test_one_side_asked_keeps_the_other_in_proportion(
    tmp_path: Path, size: tuple[int, int], side: int, by: str
) -> None:
    """``animate=height:32`` of a 200x320 image made 200x32 frames: the width is scaled
    too, as ``width`` alone scales the height."""
    first = plain(tmp_path / "a.png", *size, RED)
    second = plain(tmp_path / "b.png", size[1], size[0], BLUE)
    dest, _ = render(tmp_path, [first, second], [f"animate={by}:{side}"])
    made = frames_of(dest)
    width, height = made.width, made.get("page-height")
    assert (width, height) == proportional(f"{by}:{side}", *size)
    assert made.height == 2 * height


# -- a result without animation, and answers: one frame --------------------------------------
@pytest.mark.parametrize("fmt", ["png", "jpg", "avif", "tiff", "gif", "webp", None])
def test_a_still_format_is_the_first_frame(tmp_path: Path, fmt: str | None) -> None:
    """``animate/output=format:png`` answered a GIF of every frame: a format without
    animation holds the first frame, as it does of an animated source."""
    paths = [plain(tmp_path / f"{i}.png", 60, 40, c) for i, c in enumerate((RED, BLUE, GREEN))]
    segments = ["animate=delay:300,width:30"] + ([f"output=format:{fmt}"] if fmt else [])
    dest, output = render(tmp_path, paths, segments)
    animated = output.format in frames.ANIMATED_OUTPUTS
    made = frames_of(dest) if animated else pyvips.Image.new_from_file(str(dest))
    assert output.format == (fmt or "gif").replace("jpg", "jpeg")
    assert (made.width, made.height) == (30, 60 if animated else 20)
    got = colour(made, 15, 10)
    assert all(abs(a - b) < 40 for a, b in zip(got, RED, strict=True)), got


@GENERATED
@given(
    count=st.integers(1, 5),
    size=st.tuples(st.integers(40, 300), st.integers(40, 300)),
    width=st.none() | st.integers(1, 200),
    answer=st.sampled_from(["metadata", "metadata=p:[width,height]", "imagesize"]),
)
def test_an_animations_metadata_is_one_frames(
    tmp_path: Path, count: int, size: tuple[int, int], width: int | None, answer: str
) -> None:
    """``animate/metadata`` answered the strip's height (every frame's): a frame's."""
    paths = [plain(tmp_path / f"{i}.png", *size, COLOURS[i % 5]) for i in range(count)]
    task = f"animate=width:{width}" if width else "animate"
    dest, output = render(tmp_path, paths, [task, answer])
    assert output.format == "json"
    made, _ = render(tmp_path, paths, [task, "output=format:gif"])
    width_made, height_made = frames.frame_size(frames_of(made))
    want = {"width": width_made, "height": height_made}
    assert json.loads(dest.read_text()) == want


def test_an_animated_sources_metadata_is_one_frames(tmp_path: Path) -> None:
    gif = animation(tmp_path / "g.gif", 60, 30, 4)
    for segments in (["metadata"], ["flip", "metadata"], ["resize=width:30", "metadata"]):
        dest, _ = render(tmp_path, [gif], segments, mimetype="image/gif")
        width = 30 if "resize=width:30" in segments else 60
        assert json.loads(dest.read_text()) == {"width": width, "height": width // 2}


# -- EXIF orientation --------------------------------------------------------------------------
def oriented(path: Path, orientation: int, width: int, height: int) -> Path:
    """A JPEG whose stored pixels are red, a green left quarter and a blue top band,
    tagged with ``orientation``."""
    image = pyvips.Image.black(width, height).new_from_image(list(RED))
    image = image.insert(pyvips.Image.black(width // 4, height).new_from_image(list(GREEN)), 0, 0)
    image = image.insert(pyvips.Image.black(width, height // 4).new_from_image(list(BLUE)), 0, 0)
    image = image.cast("uchar").copy()
    image.set_type(pyvips.GValue.gint_type, "orientation", orientation)
    image.jpegsave(str(path), Q=95)
    return path


@pytest.mark.parametrize("orientation", range(1, 9))
@pytest.mark.parametrize("before", [True, False])
def test_frames_are_turned_by_exif_before_they_are_fitted(
    tmp_path: Path, orientation: int, before: bool
) -> None:
    """``rotate=deg:exif`` with ``animate`` turned each frame after it was framed: a 200x100
    JPEG tagged 6 became a 100x200 frame beside 200x100 ones (a 200x200 canvas, frames
    off centre). Each file is turned first, then fitted and aligned like any other."""
    rng = random.Random(orientation)
    w, h = rng.randrange(60, 200, 4), rng.randrange(60, 200, 4)
    photo = oriented(tmp_path / "o.jpg", orientation, w, h)
    square = plain(tmp_path / "s.png", 40, 40, BLUE)
    tasks = ["rotate=deg:exif", "animate=background:white,fit:clip,delay:100"]
    dest, _ = render(tmp_path, [photo, square], tasks if before else tasks[::-1])
    made = frames_of(dest)
    upright = pyvips.Image.new_from_file(str(photo)).autorot()
    frame_w, frame_h = made.width, made.get("page-height")
    assert (frame_w, frame_h) == (upright.width, upright.height)
    assert made.height == 2 * frame_h
    first = made.extract_area(0, 0, frame_w, frame_h)[:3]
    assert (first - upright).abs().avg() < 12  # the photo, upright, filling its frame
    side = min(frame_w, frame_h)  # the square fitted to the frame, centred in it
    x, y = (frame_w - side) // 2, frame_h + (frame_h - side) // 2
    for inside in ((x + side // 2, y + side // 2), (x + 2, y + 2), (x + side - 3, y + side - 3)):
        assert colour(made, *inside) == BLUE, inside
    if abs(frame_w - frame_h) >= 8:  # the background beside it, on the long side
        beside = (x - 3, y + side // 2) if frame_w > frame_h else (x + side // 2, y - 3)
        assert colour(made, *beside) == (255, 255, 255), beside


@pytest.mark.parametrize("seed", range(10))
def test_tasks_after_an_animate_are_held_to_the_total_pixel_limit(
    tmp_path: Path, seed: int
) -> None:
    """``/animate/resize=width:300/[S,S,S]`` of 20x20 files gave three 300x300 frames
    (270,000 pixels) under a limit of 100,000: the limit was checked on the frames before
    the tasks grew them. Random lists, growths and limits: refused exactly when all the
    result's frames together are over the limit."""
    rng = random.Random(seed)
    count, side = rng.randrange(2, 5), rng.randrange(10, 40)
    listed = [plain(tmp_path / f"s{i}.png", side, side, RED) for i in range(count)]
    grown = rng.randrange(side, 400)
    task = rng.choice([f"resize=width:{grown}", f"border=width:{(grown - side) // 2 + 1}"])
    limit = rng.randrange(20_000, 400_000)
    limits = Limits(50_000_000, 10**9, 4000, 20, max_total_pixels=limit)
    probe = Limits(50_000_000, 10**9, 4000, 20, max_total_pixels=10**9)
    dest, _ = render(tmp_path, listed, ["animate", task], probe, "image/gif")
    made = frames_of(dest)
    total = made.width * made.height  # every frame, one under the other
    if total <= limit:
        render(tmp_path, listed, ["animate", task], limits, "image/gif")
        return
    with pytest.raises(errors.ImageTooLarge):
        render(tmp_path, listed, ["animate", task], limits, "image/gif")


@pytest.mark.parametrize(
    ("size", "align", "kept"),
    [
        ((300, 100), "left", RED),
        ((300, 100), "right", BLUE),
        ((300, 100), "[top,left]", RED),
        ((300, 100), "[bottom,right]", BLUE),
        ((300, 100), "center", GREEN),
        ((100, 300), "top", RED),
        ((100, 300), "bottom", BLUE),
        ((100, 300), "[top,right]", RED),
        ((100, 300), "middle", GREEN),
    ],
)
def test_a_frame_cut_to_fill_keeps_the_part_align_names(
    tmp_path: Path, size: tuple[int, int], align: str, kept: tuple[int, int, int]
) -> None:
    """``animate=fit:crop,align:left`` cut every frame in its middle, as ``align`` were not
    given: with ``fit:crop`` it says which part is kept, as ``resize=fit:crop`` reads it."""
    width, height = size
    third = [width // 3, height] if width > height else [width, height // 3]
    strips = [
        pyvips.Image.black(*third).new_from_image(list(c)).cast("uchar") for c in (RED, GREEN, BLUE)
    ]
    across = 3 if width > height else 1
    source = tmp_path / "three.png"
    pyvips.Image.arrayjoin(strips, across=across).write_to_file(str(source))
    dest, _ = render(tmp_path, [source], [f"animate=width:50,height:50,fit:crop,align:{align}"])
    made = frames_of(dest)
    assert (made.width, made.height) == (50, 50)
    assert colour(made, 25, 25) == kept
