"""An animation keeps its frames, their delays and its loop count when a task makes
frames equal (``webpanim.kept_frames``). libwebp joined a frame equal to the one before
into it (delays summed) and, every frame equal (a coarse ``pixelate``, ``blackwhite``
at threshold 100), wrote a still: no animation, no loop count, one frame's duration.
GIF results kept them already (``keep_duplicate_frames``); both are checked."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import pyvips

from stowage.processing import chain
from stowage.processing.base import Limits
from stowage.processing.vips import VipsEngine

LIMITS = Limits(10**8, 10**9, 10_000, 60, max_cost=50.0)
SEEDS = range(5041, 5050)


def animation(folder: Path, seed: int, fmt: str, lossless: bool, alpha: bool) -> Path:
    """Frames of one random picture rolled, some repeated next to each other: delays from
    0 to 500 ms (10 or less plays 100 in a WebP), a loop count."""
    rng = np.random.default_rng(seed)
    width, height, count = (
        int(rng.integers(16, 60)),
        int(rng.integers(16, 50)),
        int(rng.integers(2, 7)),
    )
    base = rng.integers(0, 256, (height, width, 4 if alpha else 3), dtype=np.uint8)
    if alpha:
        base[..., 3] = np.where(rng.random((height, width)) < 0.3, 0, 255)
    shifts = np.maximum.accumulate(rng.integers(0, 3, count))  # runs of equal frames
    strip = np.concatenate([np.roll(base, int(s) * 3, axis=1) for s in shifts])
    image = pyvips.Image.new_from_array(strip).copy(interpretation="srgb")
    image.set_type(pyvips.GValue.gint_type, "page-height", height)
    delays = [int(d) for d in rng.choice([0, 10, 40, 100, 250, 500], count)]
    image.set_type(pyvips.GValue.array_int_type, "delay", delays)
    image.set_type(pyvips.GValue.gint_type, "loop", int(rng.integers(0, 5)))
    path = folder / f"a{seed}.{fmt}"
    image.write_to_file(str(path), **({"lossless": lossless} if fmt == "webp" else {}))
    return path


def frames_of(path: Path) -> tuple[np.ndarray, list[int], int, int]:
    image = pyvips.Image.new_from_file(str(path), n=-1)
    pages = int(image.get("n-pages")) if image.get_typeof("n-pages") else 1
    delays = list(image.get("delay")) if image.get_typeof("delay") else []
    loop = int(image.get("loop")) if image.get_typeof("loop") else -1
    pixels = np.asarray(image.numpy()).reshape(pages, image.height // pages, image.width, -1)
    return pixels, delays, loop, pages


@pytest.mark.parametrize("segment", ["pixelate=amount:100", "blackwhite=threshold:100", "flip"])
@pytest.mark.parametrize(
    ("fmt", "lossless", "alpha"),
    [
        ("webp", False, False),
        ("webp", True, False),
        ("webp", True, True),
        ("webp", False, True),
        ("gif", False, False),
    ],
)
def test_frames_made_equal_are_kept(
    tmp_path: Path, segment: str, fmt: str, lossless: bool, alpha: bool
) -> None:
    for seed in SEEDS:
        source = animation(tmp_path, seed, fmt, lossless, alpha)
        before, delays, loop, pages = frames_of(source)
        parsed = chain.parse([segment])
        output = chain.output_for(parsed, f"image/{fmt}")
        dest = tmp_path / f"out.{output.extension}"
        VipsEngine().render(source, parsed, output, dest, LIMITS)
        after, made_delays, made_loop, made_pages = frames_of(dest)
        assert made_pages == pages, (segment, seed)
        assert made_delays == delays and made_loop == loop, (segment, seed)
        for index in range(1, pages):  # frames equal in the source or made so stay equal
            # made equal: from exact frames (a lossy WebP's rolled frames differ by its
            # artefacts, a GIF's by each frame's palette), alike in alpha (blackwhite keeps it)
            made_equal = lossless and (segment.startswith("pixelate") or not alpha)
            same = (before[index] == before[index - 1]).all() or (made_equal and segment != "flip")
            if same:
                assert (after[index] == after[index - 1]).all(), (segment, seed, index)
