"""The fill of transparent pixels before a lossy save (``ops.hidden_filled``) on images
taller than libvips' sequential read keeps: the fill reads its input once per block size,
and a source read in sequence refused the second read from the top ("out of order
read"), so a large PNG with transparent parts answered 422 INVALID_IMAGE as WebP, AVIF
or ``auto_image``, and so did an animation of frames of several sizes on a transparent
background saved as WebP."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import pyvips

from stowage.processing import chain
from stowage.processing.base import Limits
from stowage.processing.vips import VipsEngine
from tests.processing import jobmemory
from tests.processing.test_animate import render as render_list
from tests.processing.test_engine import LIMITS

SEEDS = range(5450, 5453)
#: Room for a few frames of up to 2000x1800 each.
ROOMY = Limits(10**9, 10**10, 10_000, 60, max_total_pixels=10**9)


def holed(path: Path, rng: random.Random, width: int, height: int) -> Path:
    """Noise over ``width`` x ``height`` with a few transparent rectangles cut in it."""
    noise = pyvips.Image.gaussnoise(width, height, mean=128, sigma=60)
    colour = noise.bandjoin([noise.rot180(), noise.flip("horizontal")])
    alpha = pyvips.Image.black(width, height) + 255
    for _ in range(rng.randint(1, 4)):
        left, top = rng.randrange(width // 2), rng.randrange(height // 2)
        side_w, side_h = rng.randint(50, width // 2), rng.randint(50, height // 2)
        alpha = alpha.draw_rect(0, left, top, side_w, side_h, fill=True)
    picture = colour.bandjoin(alpha).cast("uchar").copy(interpretation="srgb")
    picture.pngsave(str(path), compression=1)
    return path


def opened(dest: Path) -> pyvips.Image:
    image = pyvips.Image.new_from_file(str(dest), n=-1)
    image.avg()  # decodes every pixel: a damaged file fails here
    return image


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("task", ["output=format:webp", "output=format:avif,quality:40"])
def test_a_tall_image_with_transparent_parts_saves_lossy(
    tmp_path: Path, seed: int, task: str
) -> None:
    rng = random.Random(seed)
    width, height = rng.randint(900, 2000), rng.randint(1500, 2200)
    source = holed(tmp_path / "holed.png", rng, width, height)
    parsed = chain.parse([task])
    output = chain.output_for(parsed, "image/png")
    dest = tmp_path / f"out.{output.extension}"
    VipsEngine(threads_per_job=1).render(source, parsed, output, dest, LIMITS)
    made = opened(dest)
    assert (made.width, made.height) == (width, height)
    assert made.hasalpha()


@pytest.mark.parametrize("seed", SEEDS)
def test_frames_of_several_sizes_on_transparent_save_as_webp(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    sizes = [(rng.randint(1500, 2000), rng.randint(1500, 1800))]
    sizes += [(rng.randint(100, 600), rng.randint(100, 600)) for _ in range(rng.randint(1, 3))]
    listed = [holed(tmp_path / f"{i}.png", rng, *size) for i, size in enumerate(sizes)]
    dest, _ = render_list(tmp_path, listed, ["animate", "output=format:webp"], ROOMY)
    made = opened(dest)
    assert made.get("n-pages") == len(listed)


# The fill alone, on a source read in sequence.
_MEASURE = """
import sys
import pyvips
from stowage.processing import ops

pyvips.concurrency_set(1)
before = peak_mib()
image = pyvips.Image.new_from_file(sys.argv[1], access="sequential")
ops.hidden_filled(image).write_to_file(sys.argv[2])
print(peak_mib() - before)
"""


@pytest.mark.parametrize("seed", range(5460, 5462))
def test_the_fill_keeps_a_few_strips_not_the_image(tmp_path: Path, seed: int) -> None:
    """The fill reads its input twice, a block's height apart: a cache of two pages of
    strips kept the whole of a still image (118 MiB grown for a 2000x8000 PNG, 61 MiB
    decoded); the larger blocks' sums made from the 4x4 ones, a few strips do (21)."""
    rng = random.Random(seed)
    width, height = rng.randint(1500, 2500), rng.randint(7000, 9000)
    source = holed(tmp_path / "tall.png", rng, width, height)
    grown_mib = jobmemory.grown_mib(_MEASURE, str(source), str(tmp_path / "filled.v"))
    decoded_mib = width * height * 4 / 2**20
    print(f"{width}x{height}: peak RSS grew {grown_mib} MiB, {decoded_mib:.0f} decoded")
    assert grown_mib < 0.6 * decoded_mib
    filled = pyvips.Image.new_from_file(str(tmp_path / "filled.v"))
    assert (filled.width, filled.height, filled.bands) == (width, height, 4)
