"""Each frame of an animation's result is what the chain makes of that frame as a still:
generated chains of the image tasks whose result depends on the frame alone, on an
animated WebP of three different frames, compared as the animation plays (100 ms ticks;
frames a task made equal are kept apart: tests/processing/test_frames_kept.py)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import pyvips
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from stowage import errors
from stowage.processing import chain
from stowage.processing.table import Kind
from stowage.processing.vips import VipsEngine
from tests.processing.test_catalogue import SPECS
from tests.processing.test_frames import LIMITS
from tests.processing.test_generated_chains import segments

WIDTH, HEIGHT, FRAMES, DELAY = 48, 32, 3, 100
#: Tasks that look at the whole animation (the faces, the attention measure, statistics)
#: or take other files or answer no image: one window, one measure for all frames.
WHOLE = {
    "enhance", "smart_crop", "crop_faces", "detect_faces", "pixelate_faces", "blur_faces",
    "redeye", "watermark", "collage", "animate", "ascii", "torn_edges",
}  # fmt: skip
TASKS = [s for s in SPECS if s.kind == Kind.IMAGE and s.name not in WHOLE]
SAVE = "output=format:webp,quality:100"


def chains() -> st.SearchStrategy[list[str]]:
    return segments(TASKS, 2).map(lambda found: [*found, SAVE])


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    folder = tmp_path_factory.mktemp("frames")
    frames = []
    for index in range(FRAMES):
        grey = pyvips.Image.gaussnoise(WIDTH, HEIGHT, sigma=30, mean=60 + 60 * index, seed=index)
        grey = grey.cast("uchar")
        frames.append(grey.bandjoin([grey.flip("horizontal"), grey.flip("vertical")]))
    strip = pyvips.Image.arrayjoin(frames, across=1).copy()
    strip.set_type(pyvips.GValue.gint_type, "page-height", HEIGHT)
    strip.set_type(pyvips.GValue.array_int_type, "delay", [DELAY] * FRAMES)
    strip.webpsave(str(folder / "animation.webp"), lossless=True)
    stills = [folder / f"still-{index}.webp" for index in range(FRAMES)]
    for frame, path in zip(frames, stills, strict=True):
        frame.webpsave(str(path), lossless=True)
    return folder / "animation.webp", stills


def rendered(source: Path, segments: list[str], dest: Path) -> pyvips.Image:
    parsed = chain.parse(segments)
    output = chain.output_for(parsed, "image/webp")
    VipsEngine(threads_per_job=1).render(source, parsed, output, dest, LIMITS)
    return pyvips.Image.new_from_file(str(dest), n=-1)


def played(image: pyvips.Image) -> list[pyvips.Image]:
    """The frame shown at each tick of ``DELAY`` ms, colours weighted by alpha. A result
    of one frame is a still: it shows at every tick."""
    if not image.get_typeof("delay"):
        return [_shown(image)] * FRAMES
    height = image.get("page-height") if image.get_typeof("page-height") else image.height
    delays = image.get("delay")
    ticks = []
    for index, delay in enumerate(delays):
        frame = image.extract_area(0, index * height, image.width, height)
        ticks += [_shown(frame)] * max(1, round(delay / DELAY))
    return ticks


def _shown(frame: pyvips.Image) -> pyvips.Image:
    """Colour weighted by alpha, as RGB (an animated WebP decodes as RGBA, a grey still
    as one band)."""
    shown = frame.premultiply() if frame.hasalpha() else frame.cast("float")
    colour = shown.extract_band(0, n=shown.bands - 1) if frame.hasalpha() else shown
    return colour if colour.bands == 3 else colour.bandjoin([colour, colour])


def same_frame(frame: pyvips.Image, alone: pyvips.Image) -> bool:
    """Over 20 dB, leaving out a few pixels on the other side of a threshold: a pixel a
    level or two from ``blackwhite``'s goes either way, and the animation's frame and the
    still are resampled apart (a still WebP shrinks on load). One such pixel of 77 in an
    11x7 result was 18.9 dB, the 76 others equal. Another frame differs everywhere."""
    far = ((frame - alone).abs() > 128).bandor()
    count = far.avg() / 255 * far.width * far.height
    if count > max(1.0, 0.02 * far.width * far.height):
        return psnr(frame, alone) > 20
    near = far.ifthenelse(alone, frame)  # those few pixels taken as equal
    return psnr(near, alone) > 20


def psnr(a: pyvips.Image, b: pyvips.Image) -> float:
    mse = ((a - b) ** 2).avg()
    return 99.0 if mse == 0 else 10 * math.log10(255**2 / mse)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(segments=chains())
@example(segments=["blackwhite=threshold:97", SAVE])  # every frame black: kept apart
def test_each_frame_is_the_chain_applied_to_that_frame(
    sources: tuple[Path, list[Path]], tmp_path: Path, segments: list[str]
) -> None:
    animation, stills = sources
    try:
        ticks = played(rendered(animation, segments, tmp_path / "animation.webp"))
    except errors.StowageError as exc:
        assert exc.status < 500, (segments, exc.code)
        return
    assert len(ticks) == FRAMES, segments
    for index, still in enumerate(stills):
        alone = played(rendered(still, segments, tmp_path / f"still-{index}.webp"))[0]
        frame = ticks[index]
        assert (frame.width, frame.height) == (alone.width, alone.height), segments
        # Lossy WebP at quality 100 both ways: 35-45 dB, 25 after a saturation of 1700 %;
        # another frame's pixels are under 15.
        assert same_frame(frame, alone), (segments, index, psnr(frame, alone))
