"""Pages and frames (processing/frames.py): an animation keeps its frames, in order, with
its delays and loop, through every task; a format without animation gets the first
frame; the page or frames decoded are the ones whose header was checked."""

from __future__ import annotations

import struct
import time
from pathlib import Path

import pytest
import pyvips
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stowage import errors
from stowage.processing import chain
from stowage.processing.base import Limits
from stowage.processing.vips import VipsEngine

LIMITS = Limits(50_000_000, 10**9, 4000, 20, max_frames=100, max_total_pixels=20_000_000)
COLOURS = [(255, 0, 0), (0, 0, 255), (0, 255, 0), (255, 255, 0), (0, 255, 255)]


def animation(path: Path, width: int, height: int, frames: int, loop: int = 0) -> Path:
    """Frames of plain colours, the left half of each darker (to see flop), 100 ms more
    each frame than the one before."""
    made = []
    for index in range(frames):
        colour = pyvips.Image.black(width, height).new_from_image(list(COLOURS[index % 5]))
        half = pyvips.Image.black(width // 2, height).new_from_image([40, 40, 40])
        made.append(colour.insert(half, 0, 0).cast("uchar"))
    strip = pyvips.Image.arrayjoin(made, across=1).copy()
    strip.set_type(pyvips.GValue.gint_type, "page-height", height)
    strip.set_type(pyvips.GValue.array_int_type, "delay", [100 * (i + 1) for i in range(frames)])
    strip.set_type(pyvips.GValue.gint_type, "loop", loop)
    strip.write_to_file(str(path))
    return path


def render(tmp: Path, source: Path, *segments: str, mimetype: str, limits: Limits = LIMITS) -> Path:
    parsed = chain.parse(list(segments))
    output = chain.output_for(parsed, mimetype)
    dest = tmp / f"out.{output.extension}"
    VipsEngine().render(source, parsed, output, dest, limits)
    return dest


def frames_of(path: Path) -> tuple[pyvips.Image, list[pyvips.Image]]:
    strip = pyvips.Image.new_from_file(str(path), n=-1)
    height = strip.get("page-height") if strip.get_typeof("page-height") else strip.height
    count = strip.height // height
    return strip, [strip.extract_area(0, i * height, strip.width, height) for i in range(count)]


def colour_at(image: pyvips.Image, x: int, y: int) -> tuple[int, ...]:
    return tuple(round(v) for v in image(x, y)[:3])


def near(got: tuple[int, ...], want: tuple[int, ...]) -> bool:
    return all(abs(a - b) <= 24 for a, b in zip(got, want, strict=True))


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    fmt=st.sampled_from([("gif", "image/gif"), ("webp", "image/webp")]),
    frames=st.integers(2, 5),
    task=st.sampled_from(
        [
            "resize=width:20",
            "flip",
            "flop",
            "rotate=deg:90",
            "crop=dim:[0,0,30,10]",
            "negative",
            "border=width:3",
            "rounded_corners=radius:4",
            "resize=width:50,height:50,fit:crop",
        ]
    ),
)
def test_an_animation_keeps_its_frames_through_a_task(
    tmp_path: Path, fmt: tuple[str, str], frames: int, task: str
) -> None:
    source = animation(tmp_path / f"a.{fmt[0]}", 40, 24, frames, loop=3)
    out = render(tmp_path, source, task, mimetype=fmt[1])
    strip, got = frames_of(out)
    assert len(got) == frames
    assert strip.get("delay") == [100 * (i + 1) for i in range(frames)]
    assert strip.get("loop") == 3
    expected = pyvips.Image.new_from_file(
        str(render(tmp_path, source, task, "output=format:png", mimetype=fmt[1], limits=LIMITS))
    )  # the first frame alone, as a still result takes it
    assert (got[0].width, got[0].height) == (expected.width, expected.height)
    for index, frame in enumerate(got):  # each frame its own colour, in order
        want = COLOURS[index % len(COLOURS)]
        if task == "negative":
            want = tuple(255 - c for c in want)
        x = frame.width * 3 // 4 if task != "flop" else frame.width // 4
        if task.startswith("rotate"):
            x, y = frame.width // 2, frame.height * 3 // 4
        else:
            y = frame.height // 2
        assert near(colour_at(frame, x, y), want), (index, colour_at(frame, x, y), want)


def test_a_still_format_gets_the_first_frame(tmp_path: Path) -> None:
    source = animation(tmp_path / "a.gif", 40, 24, 3)
    out = pyvips.Image.new_from_file(
        str(render(tmp_path, source, "output=format:png", mimetype="image/gif"))
    )
    assert (out.width, out.height) == (40, 24)
    assert near(colour_at(out, 30, 12), COLOURS[0])


def test_output_page_picks_a_frame(tmp_path: Path) -> None:
    source = animation(tmp_path / "a.gif", 40, 24, 3)
    out = render(
        tmp_path, source, "output=page:2,format:png", "resize=width:20", mimetype="image/gif"
    )
    image = pyvips.Image.new_from_file(str(out))
    assert (image.width, image.height) == (20, 12)
    assert near(colour_at(image, 15, 6), COLOURS[1])
    with pytest.raises(errors.InvalidParameter):
        render(tmp_path, source, "output=page:4,format:png", mimetype="image/gif")


def test_frame_count_and_total_pixels_are_limited(tmp_path: Path) -> None:
    source = animation(tmp_path / "a.gif", 40, 24, 12)
    few = Limits(50_000_000, 10**9, 4000, 20, max_frames=10)
    with pytest.raises(errors.ImageTooLarge, match="frames"):
        render(tmp_path, source, "flip", mimetype="image/gif", limits=few)
    # a still result decodes one frame: allowed
    render(tmp_path, source, "output=format:png", mimetype="image/gif", limits=few)
    with pytest.raises(errors.ImageTooLarge, match="frames"):  # a GIF's page 11 decodes 11
        render(tmp_path, source, "output=page:11,format:png", mimetype="image/gif", limits=few)
    small = Limits(50_000_000, 10**9, 4000, 20, max_total_pixels=40 * 24 * 11)
    with pytest.raises(errors.ImageTooLarge, match="pixels"):
        render(tmp_path, source, "flip", mimetype="image/gif", limits=small)
    with pytest.raises(errors.ImageTooLarge, match="pixels"):  # what it would make
        render(
            tmp_path,
            animation(tmp_path / "b.gif", 10, 10, 3),
            "resize=width:60",
            mimetype="image/gif",
            limits=Limits(50_000_000, 10**9, 4000, 20, max_total_pixels=3 * 3600 - 1),
        )


def tiff_with_a_huge_first_page(path: Path, small: pyvips.Image) -> Path:
    """A TIFF whose first page claims 40000x40000 grey pixels (its strip is a few bytes:
    decoding it is an error or minutes of work) and whose second page is ``small``."""
    second = path.with_suffix(".p2.tif")
    small.tiffsave(str(second))
    data = bytearray(second.read_bytes())
    assert data[:4] == b"II*\x00"
    first_ifd = len(data)
    entries = [
        (256, 4, 1, 40_000),
        (257, 4, 1, 40_000),
        (258, 3, 1, 8),
        (259, 3, 1, 1),
        (262, 3, 1, 1),
        (273, 4, 1, 8),
        (277, 3, 1, 1),
        (278, 4, 1, 40_000),
        (279, 4, 1, 16),
    ]
    old_first = struct.unpack("<I", data[4:8])[0]
    ifd = struct.pack("<H", len(entries))
    for tag, kind, count, value in entries:
        ifd += struct.pack("<HHII", tag, kind, count, value)
    ifd += struct.pack("<I", old_first)  # the next page: the small one
    data += ifd
    data[4:8] = struct.pack("<I", first_ifd)
    path.write_bytes(bytes(data))
    return path


def test_the_page_decoded_is_the_page_checked(tmp_path: Path) -> None:
    small = pyvips.Image.black(80, 60).new_from_image([0, 0, 255]).cast("uchar")
    source = tiff_with_a_huge_first_page(tmp_path / "two.tif", small)
    header = pyvips.Image.new_from_file(str(source))
    assert (header.width, header.height, header.get("n-pages")) == (40_000, 40_000, 2)
    started = time.monotonic()
    for segments in (
        ["output=page:2,format:png", "resize=width:40"],
        ["resize=width:40", "output=page:2,format:png"],
        ["output=page:2,format:png", "flip"],
        ["output=page:2,format:png", "resize=width:40,height:40,fit:crop", "rotate=deg:45"],
    ):
        out = pyvips.Image.new_from_file(
            str(render(tmp_path, source, *segments, mimetype="image/tiff"))
        )
        assert out.width <= 80 and near(
            colour_at(out, out.width // 2, out.height // 2), (0, 0, 255)
        ), segments
    assert time.monotonic() - started < 5
    with pytest.raises(errors.ImageTooLarge):  # page 1 is what it says it is
        render(tmp_path, source, "resize=width:40", mimetype="image/tiff")


GROWING = ["upscale", "resize=width:{2w}", "resize=width:{4w}", "border=width:{b}", "rotate=deg:90"]


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    size=st.tuples(st.integers(8, 60), st.integers(8, 60)),
    grow=st.sampled_from(GROWING),
    then=st.sampled_from(["resize=height:{h}", "resize=width:{w2},height:{h},fit:scale"]),
    fmt=st.sampled_from([("gif", "image/gif"), ("webp", "image/webp")]),
)
def test_each_frame_is_sized_as_the_still_after_a_task_that_grows_it(
    tmp_path: Path,
    size: tuple[int, int],
    grow: str,
    then: str,
    fmt: tuple[str, str],
) -> None:
    """A frame made a whole multiple of the source's frame height tall kept the strip's
    ``page-height``, and a later resize took it for several pages: ``upscale/resize=
    height:40`` on 60x40 frames gave 120x80 frames, the still 60x40."""
    width, height = size
    values = {"2w": 2 * width, "4w": 4 * width, "b": height // 2, "h": height, "w2": width}
    steps = [grow.format(**values), then.format(**values)]
    source = animation(tmp_path / f"a.{fmt[0]}", width, height, 3)
    _, got = frames_of(render(tmp_path, source, *steps, mimetype=fmt[1]))
    still = pyvips.Image.new_from_file(
        str(render(tmp_path, source, *steps, "output=format:png", mimetype=fmt[1]))
    )
    assert len(got) == 3
    assert {(f.width, f.height) for f in got} == {(still.width, still.height)}


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    colours=st.lists(
        st.tuples(st.integers(0, 255), st.integers(0, 255), st.integers(0, 255)),
        min_size=2,
        max_size=4,
    )
)
def test_each_gif_frame_keeps_its_own_colours_inside_a_shadow(
    tmp_path: Path, colours: list[tuple[int, int, int]]
) -> None:
    """A GIF frame reused the previous frame's palette while the error averaged over the
    frame was small: a frame of another plain colour inside a shadow (the same on every
    frame) came out 20-30 levels off, as the nearest grey of the shadow's palette."""
    made = [pyvips.Image.black(120, 80).new_from_image(list(c)).cast("uchar") for c in colours]
    strip = pyvips.Image.arrayjoin(made, across=1).copy()
    strip.set_type(pyvips.GValue.gint_type, "page-height", 80)
    source = tmp_path / "a.gif"
    strip.write_to_file(str(source), keep_duplicate_frames=True)
    _, stored = frames_of(source)  # the source's own colours, as its palettes hold them
    _, got = frames_of(render(tmp_path, source, "shadow", mimetype="image/gif"))
    assert len(got) == len(colours)
    for frame, original in zip(got, stored, strict=True):
        inside, want = colour_at(frame, 60, 40), colour_at(original, 60, 40)
        assert all(abs(a - b) <= 8 for a, b in zip(inside, want, strict=True)), (inside, want)
