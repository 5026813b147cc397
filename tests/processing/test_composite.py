"""Tasks that read several sources (processing/composite.py), rendered by the engine as a
job process does: the extra sources' paths made known for the job."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import pyvips
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from stowage import errors
from stowage.processing import chain, composite, svg
from stowage.processing.base import Limits
from stowage.processing.vips import VipsEngine

LIMITS = Limits(50_000_000, 10**9, 4000, 20, max_total_pixels=5_000_000)
RED, BLUE, GREEN = (255, 0, 0), (0, 0, 255), (0, 255, 0)


def plain(path: Path, width: int, height: int, colour: tuple[int, int, int]) -> Path:
    pyvips.Image.black(width, height).new_from_image(list(colour)).cast("uchar").write_to_file(
        str(path)
    )
    return path


def render(
    tmp: Path,
    source: Path,
    segments: list[str],
    sources: tuple[tuple[str, Path], ...],
    mimetype: str = "image/png",
    limits: Limits = LIMITS,
    listed: int = 0,
) -> pyvips.Image:
    """``sources``: a ``[h1,h2]`` source's files (the first ``listed``), then those the
    tasks name, as the service sends them."""
    parsed = chain.parse(segments)
    output = chain.output_for(parsed, mimetype)
    dest = tmp / f"out.{output.extension}"
    with composite.using(sources, limits, listed, dest):
        VipsEngine().render(source, parsed, output, dest, limits)
    animated = output.format in ("gif", "webp")
    return pyvips.Image.new_from_file(str(dest), **({"n": -1} if animated else {}))


def colour(image: pyvips.Image, x: int, y: int) -> tuple[int, ...]:
    return tuple(round(v) for v in image(x, y)[:3])


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    size=st.integers(10, 200),
    vertical=st.sampled_from(["top", "middle", "bottom"]),
    horizontal=st.sampled_from(["left", "center", "right"]),
)
def test_watermark_is_placed_and_sized(
    tmp_path: Path, size: int, vertical: str, horizontal: str
) -> None:
    base = plain(tmp_path / "base.png", 200, 100, RED)
    mark = plain(tmp_path / "mark.png", 40, 20, BLUE)
    out = render(
        tmp_path,
        base,
        [f"watermark=file:MARK0000000000000000,size:{size},position:[{vertical},{horizontal}]"],
        (("MARK0000000000000000", mark),),
    )
    assert (out.width, out.height) == (200, 100)
    w, h = round(40 * size / 100), round(20 * size / 100)
    x = {"left": 0, "center": (200 - w) // 2, "right": 200 - w}[horizontal]
    y = {"top": 0, "middle": (100 - h) // 2, "bottom": 100 - h}[vertical]
    if w > 2 and h > 2 and w < 200 and h < 100:
        assert colour(out, x + w // 2, y + h // 2) == BLUE
        outside = (x + w + 1, y) if x + w + 1 < 200 else (x - 2, y)
        assert colour(out, *outside) == RED


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    mark_w=st.integers(1, 120),
    mark_h=st.integers(1, 120),
    size=st.one_of(st.integers(1, 12), st.integers(1, 250)),
)
@example(mark_w=60, mark_h=40, size=1)  # under a pixel: drawn at its full size
def test_watermark_is_size_percent_of_the_mark_at_least_a_pixel(
    tmp_path: Path, mark_w: int, mark_h: int, size: int
) -> None:
    base = plain(tmp_path / "base.png", 300, 300, RED)
    mark = plain(tmp_path / "mark.png", mark_w, mark_h, BLUE)
    out = render(
        tmp_path,
        base,
        [f"watermark=file:MARK0000000000000000,size:{size},position:[top,left]"],
        (("MARK0000000000000000", mark),),
    )
    drawn = (out[:3] != list(RED)).bandor()  # every pixel the mark touched
    columns, rows = drawn.project()  # (find_trim's median filter erases a lone pixel)
    found = [
        [i for i, set_ in enumerate(bytes((line > 0).write_to_memory())) if set_]
        for line in (columns, rows)
    ]
    wanted = [min(300, max(1, int(side * size / 100 + 0.5))) for side in (mark_w, mark_h)]
    assert found == [list(range(side)) for side in wanted]


def test_watermark_of_a_source_not_read_is_refused(tmp_path: Path) -> None:
    base = plain(tmp_path / "base.png", 20, 20, RED)
    with pytest.raises(errors.InvalidParameter):
        render(tmp_path, base, ["watermark=file:OTHER000000000000000"], ())


def test_an_extra_source_is_held_to_the_limits(tmp_path: Path) -> None:
    from tests.api.test_transform_rules import png_bomb

    base = plain(tmp_path / "base.png", 20, 20, RED)
    bomb = tmp_path / "bomb.png"
    bomb.write_bytes(png_bomb(60_000, 60_000))
    with pytest.raises(errors.ImageTooLarge):
        render(
            tmp_path,
            base,
            ["watermark=file:B0000000000000000000"],
            (("B0000000000000000000", bomb),),
        )
    matrix = tmp_path / "m.mat"  # libvips' own format: no image a user uploads
    pyvips.Image.black(3, 3).matrixsave(str(matrix))
    with pytest.raises(errors.NotAnImage):
        render(
            tmp_path,
            base,
            ["watermark=file:S0000000000000000000"],
            (("S0000000000000000000", matrix),),
        )


def test_collage_lays_out_every_image(tmp_path: Path) -> None:
    base = plain(tmp_path / "a.png", 100, 100, RED)
    b = plain(tmp_path / "b.png", 100, 100, BLUE)
    c = plain(tmp_path / "c.png", 100, 100, GREEN)
    out = render(
        tmp_path,
        base,
        [
            "collage=files:[B0000000000000000000,C0000000000000000000],width:430,height:430,margin:10"
        ],
        (("B0000000000000000000", b), ("C0000000000000000000", c)),
    )
    assert (out.width, out.height) == (430, 430)
    # a 2x2 grid of 200-px cells, 10 px apart: the base, then B, then C on the next row
    assert colour(out, 110, 110) == RED
    assert colour(out, 320, 110) == BLUE
    assert colour(out, 110, 320) == GREEN
    assert colour(out, 320, 320) == (255, 255, 255)
    assert colour(out, 5, 5) == (255, 255, 255)


@given(
    width=st.integers(1, 300),
    height=st.integers(1, 300),
    margin=st.integers(1, 100),
    count=st.integers(2, 5),
)
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@example(width=300, height=200, margin=100, count=3)
@example(width=1, height=1, margin=1, count=5)
def test_a_collage_takes_every_size_and_margin_the_schema_allows(
    tmp_path: Path, width: int, height: int, margin: int, count: int
) -> None:
    """``width:300,height:200,margin:100`` was 400 "the margins leave no room" although
    filestack-js lets every one of those values through: the margins narrow to at most
    half the canvas each way, and the first cell, top left, shows the image."""
    base = plain(tmp_path / "a.png", 50, 50, RED)
    others = tuple(
        (f"{i}" * 20, plain(tmp_path / f"{i}.png", 50, 50, BLUE)) for i in range(1, count)
    )
    files = ",".join(name for name, _ in others)
    tasks = [f"collage=files:[{files}],width:{width},height:{height},margin:{margin}"]
    out = render(tmp_path, base, tasks, others)
    assert (out.width, out.height) == (width, height)
    columns = math.ceil(math.sqrt(count))
    rows = math.ceil(count / columns)
    if width >= columns and height >= rows:
        first = out.extract_area(0, 0, width // columns, height // rows)[:3]
        assert (first == list(RED)).bandand().max() == 255


@pytest.mark.parametrize("fmt", ["gif", "webp"])
def test_animate_makes_frames_of_the_sources(tmp_path: Path, fmt: str) -> None:
    paths = tuple(
        (name, plain(tmp_path / f"{name}.png", 60, 40, c))
        for name, c in (("R", RED), ("B", BLUE), ("G", GREEN))
    )
    out = render(
        tmp_path,
        paths[0][1],
        ["animate=delay:250,loop:2,width:30", f"output=format:{fmt}"],
        paths,
        listed=len(paths),
    )
    assert out.get("page-height") == 20 and out.height == 60
    assert out.get("delay") == [250, 250, 250] and out.get("loop") == 2
    for index, want in enumerate((RED, BLUE, GREEN)):
        got = colour(out, 15, index * 20 + 10)
        assert all(abs(a - b) < 24 for a, b in zip(got, want, strict=True)), (index, got)


def test_animate_is_held_to_the_total_pixels(tmp_path: Path) -> None:
    paths = tuple((str(i), plain(tmp_path / f"{i}.png", 100, 100, RED)) for i in range(5))
    small = Limits(50_000_000, 10**9, 4000, 20, max_total_pixels=49_999)
    with pytest.raises(errors.ImageTooLarge):
        render(
            tmp_path,
            paths[0][1],
            ["animate", "output=format:gif"],
            paths,
            limits=small,
            listed=len(paths),
        )


def test_the_sources_pixels_are_held_to_the_total(tmp_path: Path) -> None:
    base = plain(tmp_path / "base.png", 20, 20, RED)
    others = tuple((f"{i:020d}", plain(tmp_path / f"{i}.png", 100, 100, BLUE)) for i in range(3))
    files = ",".join(name for name, _ in others)
    segments = [f"collage=files:[{files}],width:300,height:300"]
    roomy = Limits(50_000_000, 10**9, 4000, 20, max_total_pixels=30_000)
    assert render(tmp_path, base, segments, others, limits=roomy).width == 300
    tight = Limits(50_000_000, 10**9, 4000, 20, max_total_pixels=29_999)
    with pytest.raises(errors.ImageTooLarge, match="sources"):
        render(tmp_path, base, segments, others, limits=tight)


def test_a_collage_of_an_animation_takes_its_first_frame(tmp_path: Path) -> None:
    from tests.processing.test_frames import COLOURS, animation

    base = animation(tmp_path / "a.gif", 40, 40, 3)
    other = plain(tmp_path / "b.png", 40, 40, BLUE)
    handle = "B" * 20
    out = render(
        tmp_path,
        base,
        [f"collage=files:[{handle}],width:100,height:50,margin:5"],
        ((handle, other),),
        mimetype="image/gif",
    )
    assert (out.width, out.height) == (100, 50)  # one frame, not the strip of three
    got = colour(out, 40, 25)
    assert all(abs(a - b) < 40 for a, b in zip(got, COLOURS[0], strict=True)), got


@settings(max_examples=12, deadline=None)
@given(
    frames=st.lists(st.sampled_from(["R", "B"]), max_size=4),
    before=st.booleans(),
)
def test_a_watermarks_file_is_no_frame_of_the_animation(
    tmp_path_factory: pytest.TempPathFactory, frames: list[str], before: bool
) -> None:
    """``watermark=file:W/animate/[h1,h2]`` made W a third frame (and ``animate/H``
    with a watermark, a frame of W instead of H): the frames are the list's files only,
    each with the watermark on it."""
    tmp = tmp_path_factory.mktemp("frames")
    files = {"R": RED, "B": BLUE, "W": GREEN}
    paths = {name: plain(tmp / f"{name}.png", 60, 40, c) for name, c in files.items()}
    handle = {name: name * 20 for name in files}
    mark, animate = f"watermark=file:{handle['W']},size:20,position:[top,left]", "animate=width:60"
    segments = [mark, animate] if before else [animate, mark]
    listed = tuple((handle[name], paths[name]) for name in frames)
    main = paths[frames[0]] if frames else paths["R"]
    out = render(
        tmp,
        main,
        [*segments, "output=format:gif"],
        (*listed, (handle["W"], paths["W"])),
        listed=len(listed),
    )
    expected = frames or ["R"]
    assert out.height == 40 * len(expected)
    for index, name in enumerate(expected):
        assert colour(out, 55, index * 40 + 35) == files[name], (index, name)
        assert colour(out, 2, index * 40 + 2) == GREEN, index  # the watermark, on every frame


ONE_FILE_TASKS = [
    "flip",
    "flop",
    "negative",
    "rotate=deg:90",
    "sepia",
    "border=width:7",
    "resize=w:30",
]


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(task=st.sampled_from(ONE_FILE_TASKS), before=st.booleans())
def test_a_collage_takes_the_tasks_in_their_order(tmp_path: Path, task: str, before: bool) -> None:
    """A task before a collage changes the file it places; one after it, the collage.
    Every task ran on the collage, wherever it stood (``flip/collage`` flipped the other
    files' cells too). Checked against the two steps rendered one after the other."""
    half = pyvips.Image.black(30, 40).new_from_image(list(RED)).cast("uchar")
    base = tmp_path / "base.png"
    half.join(half.new_from_image(list(BLUE)), "horizontal").write_to_file(str(base))
    other = ((("G" * 20), plain(tmp_path / "g.png", 60, 40, GREEN)),)
    collage = f"collage=files:[{'G' * 20}],width:200,height:90,margin:5"
    both = render(tmp_path, base, [task, collage] if before else [collage, task], other)
    if before:
        (tmp_path / "step").mkdir(exist_ok=True)
        first = render(tmp_path / "step", base, [task], ())
        first.write_to_file(str(tmp_path / "first.png"))
        expected = render(tmp_path, tmp_path / "first.png", [collage], other)
    else:
        render(tmp_path, base, [collage], other).write_to_file(str(tmp_path / "first.png"))
        expected = render(tmp_path, tmp_path / "first.png", [task], ())
    assert (both.width, both.height) == (expected.width, expected.height)
    assert (both - expected).abs().max() < 3, (task, before)


def logo(path: Path, width: int, height: int, fill: str, inner: str = "") -> Path:
    path.write_text(
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}">'
        f'<rect width="{width}" height="{height}" fill="{fill}"/>{inner}</svg>'
    )
    return path


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    size=st.tuples(st.integers(4, 120), st.integers(4, 120)),
    task=st.sampled_from(["watermark", "collage", "animate"]),
)
def test_an_svg_logo_is_a_source_like_any_image(
    tmp_path: Path, size: tuple[int, int], task: str
) -> None:
    """An SVG (a logo, the usual watermark) as a watermark's, collage's or animation's
    file: checked and rewritten as the main source is, then drawn. It was 415."""
    base = plain(tmp_path / "base.png", 80, 60, RED)
    mark = logo(tmp_path / "logo.svg", *size, "#0000ff")
    named = "L" * 20
    segments = {
        "watermark": [f"watermark=file:{named},size:50,position:[middle,center]"],
        "collage": [f"collage=files:[{named}],width:170,height:70,margin:5,fit:crop"],
        "animate": ["animate=width:40,height:30,fit:scale", "output=format:gif"],
    }[task]
    sources = (("B" * 20, base), (named, mark)) if task == "animate" else ((named, mark),)
    out = render(tmp_path, base, segments, sources, listed=len(sources) if task == "animate" else 0)
    where = {"watermark": (40, 30), "collage": (127, 35), "animate": (20, 45)}[task]
    assert colour(out, *where) == BLUE, task
    assert not list(tmp_path.glob("*.safe.svg"))  # the checked copies are gone


def test_an_svg_source_naming_a_file_is_refused(tmp_path: Path) -> None:
    base = plain(tmp_path / "base.png", 80, 60, RED)
    inner = '<image href="file:///etc/passwd" width="5" height="5"/>'
    mark = logo(tmp_path / "logo.svg", 20, 20, "#0000ff", inner)
    with pytest.raises(errors.InvalidImage, match="refers to"):
        render(tmp_path, base, [f"watermark=file:{'L' * 20}"], (("L" * 20, mark),))
    assert not list(tmp_path.glob("*.safe.svg"))


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    source=st.tuples(st.integers(1, 1800), st.integers(1, 1800)),
    cell=st.tuples(st.integers(1, 600), st.integers(1, 4900)).map(
        lambda wh: wh if wh[0] % 2 else wh[::-1]
    ),
)
@example(source=(1800, 40), cell=(61, 4900))
def test_a_crop_fit_cuts_before_it_scales(
    tmp_path: Path, source: tuple[int, int], cell: tuple[int, int]
) -> None:
    """``fit:crop`` of a wide image into a tall cell (or the reverse) scaled it to cover
    the cell first: 1800x300 into 297x8817 is 52900x8817, and the job ran to its
    deadline. Cut first, the work is the cell's; the cell is filled exactly."""
    image = pyvips.Image.black(*source).new_from_image(list(BLUE)).cast("uchar")
    made = composite.fitted(image, *cell, crop=True)
    assert (made.width, made.height) == cell
    assert colour(made, cell[0] // 2, cell[1] // 2) == BLUE
    base = tmp_path / "noise.png"  # read in one pass, as a PNG is; 31 s for the example
    grey = pyvips.Image.gaussnoise(*source, sigma=40, mean=128).cast("uchar")
    grey.bandjoin([grey, grey]).pngsave(str(base))
    limits = Limits(50_000_000, 10**9, 10_000, 10, max_total_pixels=50_000_000)
    width, height = cell[0] * 2 + 30, cell[1] + 20
    segments = [f"collage=files:[{'R' * 20}],width:{width},height:{height},fit:crop"]
    out = render(tmp_path, base, segments, (("R" * 20, base),), limits=limits)
    assert (out.width, out.height) == (width, height)


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(wide=st.integers(2, 1800), width=st.integers(1, 40), fit=st.sampled_from(["clip", "crop"]))
def test_an_animation_of_a_wide_image_has_at_least_one_row(
    tmp_path: Path, wide: int, width: int, fit: str
) -> None:
    """``animate=width:1`` of a 1800x300 image made frames 0 rows tall (422)."""
    path = plain(tmp_path / "wide.png", wide, 1, RED)
    segments = [f"animate=width:{width},fit:{fit}", "output=format:gif"]
    out = render(tmp_path, path, segments, (("W" * 20, path),), listed=1)
    assert out.width == width and out.height >= 1


def test_no_checked_svg_outlives_its_job(tmp_path: Path) -> None:
    """An SVG main source and an SVG watermark end in another order than they began; the
    checked copies libvips may open must all be forgotten when the job ends."""
    main = logo(tmp_path / "main.svg", 80, 60, "#ff0000")
    mark = logo(tmp_path / "logo.svg", 20, 20, "#0000ff")
    out = render(tmp_path, main, [f"watermark=file:{'L' * 20},size:50"], (("L" * 20, mark),))
    assert colour(out, 40, 30) == BLUE
    assert not svg._SAFE.get()
