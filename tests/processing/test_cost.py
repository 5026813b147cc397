"""A chain's cost estimated from the header (processing/cost.py): near the CPU time it
really takes, above the limit for the hostile chains, below the big-job line for
ordinary ones."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest
import pyvips
from hypothesis import example, given, settings
from hypothesis import strategies as st

from stowage import errors
from stowage.config import Settings
from stowage.processing import chain, cost, frames, grammar, ops, resultbands
from stowage.processing.base import Limits, _text
from stowage.processing.table import Kind, TaskSpec
from stowage.processing.vips import VipsEngine, _steps
from tests.processing import cpuspeed
from tests.processing.test_catalogue import SPECS, inside

DEFAULTS = Settings()
LIMITS = Limits(10**9, 10**10, 10_000, 120, max_frames=10**5, max_total_pixels=10**10)


def opened_for(source: Path, segments: list[str], mimetype: str) -> tuple[frames.Opened, float]:
    parsed = chain.parse(segments)
    output = chain.output_for(parsed, mimetype)
    found = frames.open_source(str(source), parsed, output, LIMITS, "random")
    return found, cost.estimate(found, parsed, found.image.width, output.format)


def pattern(path: Path, width: int, height: int) -> Path:
    xy = pyvips.Image.xyz(width, height)
    (xy[0] % 256).bandjoin([xy[1] % 256, 90]).cast("uchar").write_to_file(str(path))
    return path


@pytest.mark.parametrize(
    ("size", "segments"),
    [
        (7000, ["rotate=deg:45", *["blur=amount:20"] * 3, "resize=width:10"]),
        (2500, ["resize=width:10000,height:10000,fit:scale", "blur=amount:20", "resize=width:10"]),
        (512, ["crop_faces=width:10000,height:10000"]),  # ran 14 s: no size was declared
        (512, ["crop_faces=width:9999,buffer:10000"]),
        (
            2,
            [
                "resize=width:10000,height:10000,fit:scale",
                *["blur=amount:20"] * 2,
                "resize=width:10",
            ],
        ),
    ],
)
def test_hostile_chains_are_estimated_past_the_limit(
    tmp_path: Path, size: int, segments: list[str]
) -> None:
    from tests.api.test_transform_rules import png_bomb

    source = tmp_path / "s.png"
    source.write_bytes(png_bomb(size, size))
    _, seconds = opened_for(source, segments, "image/png")
    assert seconds > DEFAULTS.processing_max_job_cost


def test_a_thumbnail_of_a_photo_is_a_small_job(tmp_path: Path) -> None:
    xy = pyvips.Image.xyz(4000, 3000)
    photo = tmp_path / "p.jpg"
    (xy[0] % 256).bandjoin([xy[1] % 256, 90]).cast("uchar").jpegsave(str(photo))
    _, seconds = opened_for(photo, ["resize=width:300", "output=format:webp"], "image/jpeg")
    assert seconds < DEFAULTS.processing_big_job_cost


@pytest.mark.parametrize(
    ("size", "segments"),
    [
        # Hostile until rotations were held in memory (30 s on a 7000-pixel PNG; now 3 s).
        (2000, ["rotate=deg:45", "blur=amount:20", "resize=width:10"]),
        (800, ["resize=width:3000,height:3000,fit:scale", "blur=amount:20", "resize=width:10"]),
        (3000, ["sharpen=amount:4", "modulate=brightness:120"]),
        # Tasks that grow the image (their declared ``size``, ``works_on``): smart_crop to
        # 6000x6000 once took 30 s while estimated at a fraction of a second.
        (1500, ["smart_crop=width:6000,height:6000"]),
        (1500, ["upscale=noise:high"]),
        (1500, ["shadow=blur:20,vector:[1000,1000]"]),
        (1500, ["polaroid=rotate:45"]),
        (2000, ["oil_paint=amount:8"]),
        # A rotation is held in memory (``ops.held``): what follows no longer computes it
        # again per strip, and what precedes it counts once (sepia then a 30-degree turn
        # was estimated at 13 s, and refused, for 0.15 s of work).
        (2000, ["sepia", "rotate=deg:30"]),
        (2000, ["rounded_corners", "rotate=deg:30", "resize=width:100"]),
        (2000, ["polaroid=rotate:252", "resize=height:184"]),
    ],
)
def test_the_estimate_is_near_the_cpu_time(tmp_path: Path, size: int, segments: list[str]) -> None:
    """At least a third of the CPU time on one libvips thread (the job processes'
    setting), so that a job refused at 8 s could not have finished in a few; at most six
    times it, so that refusing at 8 s does not refuse what takes 1.5. (The rates are a
    photo's: this pattern saves as PNG several times faster, and sepia then a 30-degree
    turn measured 2.2-3.0 times below its estimate, so a bound of three failed once. They
    were measured with the machine in its slow state; on 2026-12-01, in a faster state, the
    same chains took 1.3-5.1 times less than their estimates, so the bound is six. The CPU
    time is now brought to the rates' state by ``cpuspeed``.)"""
    source = pattern(tmp_path / "s.png", size, size)
    _, seconds = opened_for(source, segments, "image/png")
    parsed = chain.parse(segments)
    output = chain.output_for(parsed, "image/png")

    def spent_at(fresh: bool) -> float:
        started = time.process_time()
        VipsEngine(threads_per_job=1).render(source, parsed, output, tmp_path / "o.png", LIMITS)
        # in the state the rates describe: the machine's speed drifts about twice (cpuspeed.py)
        return (time.process_time() - started) / cpuspeed.speed(fresh=fresh)

    spent = cpuspeed.measured_again(spent_at, lambda spent: spent / 3 < seconds < spent * 6)
    print(f"{segments} on {size}: estimated {seconds:.2f} s, took {spent:.2f} s of CPU")
    assert spent / 3 < seconds < spent * 6


IMAGE_TASKS = [spec for spec in SPECS if spec.kind is Kind.IMAGE]


@pytest.mark.parametrize("spec", IMAGE_TASKS, ids=lambda spec: spec.name)
@settings(max_examples=8, deadline=None)
@given(data=st.data(), width=st.integers(1, 120), height=st.integers(1, 120))
def test_no_task_makes_an_image_larger_than_estimated(
    spec: TaskSpec, data: st.DataObject, width: int, height: int
) -> None:
    """The estimate follows each task's size (``size_after``): a task that grows the
    image more than it says would be estimated low, and run to its deadline."""
    options = [
        f"{param.name}:{_text(data.draw(inside(param.check)))}"
        for param in spec.params
        if data.draw(st.booleans())
    ]
    try:
        task = grammar.parse_task(spec.name + ("=" + ",".join(options) if options else ""))
        black = pyvips.Image.black(width, height, bands=3).copy(interpretation="srgb")
        image = _steps(ops.srgb(black), [task], 10**5)
    except errors.StowageError:
        return  # options the task refuses together (a 400), or a size it refuses (a 413)
    made_w, made_h = image.width, frames.frame_size(image)[1]
    estimated_w, estimated_h = cost.size_after(task, width, height)
    assert made_w <= estimated_w and made_h <= estimated_h, (task, (made_w, made_h))


@pytest.mark.parametrize("spec", IMAGE_TASKS, ids=lambda spec: spec.name)
@settings(max_examples=12, deadline=None)
@given(data=st.data(), bands=st.integers(1, 4))
def test_no_task_leaves_fewer_bands_than_counted(
    spec: TaskSpec, data: st.DataObject, bands: int
) -> None:
    """An uncompressed result is refused from the bands the estimate counts
    (``resultbands.least_bands``): a task that leaves fewer than it says would refuse what fits."""
    options = [
        f"{param.name}:{_text(data.draw(inside(param.check)))}"
        for param in spec.params
        if data.draw(st.booleans())
    ]
    alpha = bands in (2, 4)
    try:
        task = grammar.parse_task(spec.name + ("=" + ",".join(options) if options else ""))
        space = "b-w" if bands < 3 else "srgb"
        start = pyvips.Image.black(30, 20, bands=bands).copy(interpretation=space)
        image = _steps(ops.srgb(start), [task], 10**5)
    except errors.StowageError:
        return
    colour, counted_alpha = resultbands.bands_after(task, 1 if bands < 3 else 3, alpha)
    assert image.bands - image.hasalpha() >= colour, (task, bands, image.bands)
    assert image.hasalpha() or not counted_alpha, (task, bands, image.bands)


@pytest.mark.parametrize(("frames", "width", "height"), [(30, 200, 150), (200, 40, 30)])
def test_an_animation_saved_as_gif_is_estimated_near_its_cpu_time(
    tmp_path: Path, frames: int, width: int, height: int
) -> None:
    """Frames of many colours (a blurred photo) are the GIF saver's worst case: a palette
    is made for each. At libvips' default effort, 30 such frames of 400x300 took 7.5 s
    and were estimated at 1.9 s; saved at effort 4 they take about 2 s."""
    grey = pyvips.Image.gaussnoise(width, height * frames, sigma=50, mean=128, seed=1)
    strip = grey.bandjoin([grey.flip("horizontal"), grey.flip("vertical")]).cast("uchar")
    strip = strip.copy()
    strip.set_type(pyvips.GValue.gint_type, "page-height", height)
    source = tmp_path / "a.gif"
    strip.gifsave(str(source), effort=1)
    _, seconds = opened_for(source, ["blur"], "image/gif")
    parsed = chain.parse(["blur"])
    output = chain.output_for(parsed, "image/gif")

    def spent_at(fresh: bool) -> float:
        started = time.process_time()
        made = VipsEngine(threads_per_job=1).render(source, parsed, output, tmp_path / "o", LIMITS)
        assert made.output.format == "gif"
        return (time.process_time() - started) / cpuspeed.speed(fresh=fresh)

    spent = cpuspeed.measured_again(spent_at, lambda spent: spent / 3.5 < seconds < spent * 3)
    print(f"{frames} frames of {width}x{height}: estimated {seconds:.2f} s, took {spent:.2f} s")
    # The model's rates were measured on a machine about twice as fast as the slowest
    # that runs this (where 30 frames took 3.0x the estimate): 3.5 allows that and still
    # fails the 3.9x underestimate this test was written for.
    assert spent / 3.5 < seconds < spent * 3


@settings(max_examples=12, deadline=None)
@given(
    source=st.tuples(st.integers(1, 700), st.integers(1, 700)),
    box=st.tuples(st.integers(0, 10_000), st.integers(0, 10_000)).filter(any),
)
@example(source=(700, 3), box=(100, 100))  # a banner: a 23333x100 cover
@example(source=(333, 217), box=(9000, 9000))
@example(source=(54, 135), box=(10_000, 171))
def test_smart_crop_is_held_to_what_it_makes_not_its_cover(
    tmp_path_factory: pytest.TempPathFactory, source: tuple[int, int], box: tuple[int, int]
) -> None:
    """smart_crop scaled its image to cover the box and held the cover before it cut: a
    333x217 PNG to 9000x9000 made a 13812x9000 cover for 27 s, then answered 422; the
    cover's pixels were then held to the square of the side limit, which refused a
    54x135 photo to 10000x171 for a 10000x25000 cover that is cut away. A cover that
    enlarges the picture is now never made whole (``geometry.lazy_cover``): what the task
    holds is the picture, the finder's view of the cover (1024 px a side) or a cover
    smaller than the picture, and the estimate never refuses it for its cover."""
    from stowage.processing import faces, subjects

    limit = 4000  # the output side limit of this test: covers past it are common
    path = pattern(tmp_path_factory.mktemp("smart") / "s.png", *source)
    segment = "smart_crop=" + ",".join(f"{k}:{v}" for k, v in zip("wh", box, strict=True) if v)
    parsed = chain.parse([segment, "resize=width:30"])
    output = chain.output_for(parsed, "image/png")
    opened = frames.open_source(str(path), parsed, output, LIMITS, "random")
    worked = subjects.worked_size(parsed.tasks[0], *source)
    assert worked[0] * worked[1] <= max(faces.DETECT_SIDE**2, source[0] * source[1])
    try:
        cost.estimate(opened, parsed, source[0], output.format, (), limit)
    except errors.ImageTooLarge as exc:
        pytest.fail(f"refused: {exc}")


def test_resize_is_never_estimated_smaller_than_it_makes() -> None:
    """Half a pixel rounds up in libvips and to even in Python's round(): 2x4 to height 5
    is 3x5, estimated 2x5 (seeded sizes, one side or both, every fit that scales)."""
    rng = random.Random(23)
    for _ in range(300):
        width, height = rng.randint(1, 90), rng.randint(1, 90)
        sides = rng.choice([("width",), ("height",), ("width", "height")])
        fit = rng.choice(["clip", "max", "scale", "crop"])
        options = ",".join(f"{side}:{rng.randint(1, 120)}" for side in sides)
        task = grammar.parse_task(f"resize={options},fit:{fit}")
        black = pyvips.Image.black(width, height, bands=3).copy(interpretation="srgb")
        made = _steps(ops.srgb(black), [task], 10**5)
        estimated = cost.size_after(task, width, height)
        assert made.width <= estimated[0] and made.height <= estimated[1], (task, width, height)
