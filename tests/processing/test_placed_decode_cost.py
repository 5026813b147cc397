"""The decode of a JPEG 2000, BMP or ICO file a chain places (a watermark, a collage's
cells, an animation's frames) is priced from its header before it is decoded
(processing/placedcost.py).

Before: only its size was held to the limits; a JPEG 2000 watermark's decode (about
0.2 s a megapixel in Pillow) was not counted at all, and a collage's cells were priced at
libvips' PNG decode."""

from __future__ import annotations

import io
import random
from pathlib import Path

import numpy as np
import pytest
import pyvips
from PIL import Image

from stowage.processing import chain, composite, cost
from stowage.processing.vips import VipsEngine
from tests.processing import bmpfiles, cpuspeed
from tests.processing.test_cost import LIMITS

SEEDS = [5261, 5262]
MARK = "M" * 20


def _placed_file(rng: random.Random, path: Path) -> None:
    """A JPEG 2000 (a smooth picture with grain, lossy or lossless) or a BMP."""
    width, height = rng.randrange(1200, 2200), rng.randrange(1000, 1800)
    if rng.random() < 0.75:
        xy = pyvips.Image.xyz(width, height)
        grain = pyvips.Image.gaussnoise(
            width, height, sigma=rng.uniform(2, 30), seed=rng.randrange(99)
        )
        picture = ((xy[0] * 255 / width) + grain).bandjoin(
            [xy[1] * 255 / height + grain, grain + 90]
        )
        pixels = picture.cast("uchar").numpy()
        made = io.BytesIO()
        Image.fromarray(np.ascontiguousarray(pixels)).save(
            made, "JPEG2000", irreversible=rng.random() < 0.5
        )
        path.write_bytes(made.getvalue())
    else:
        path.write_bytes(bmpfiles.bmp("rgb24", width // 2, height // 2, rng))


def _estimated_and_spent(
    base: Path, mark: Path, segments: list[str], dest: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[float, float]:
    found: list[float] = []
    monkeypatch.setattr(cost, "check", lambda seconds, limits: found.append(seconds))
    parsed = chain.parse(segments)
    output = chain.output_for(parsed, "image/png")

    def run() -> None:
        with composite.using(((MARK, mark),), LIMITS, 0, dest):
            VipsEngine(threads_per_job=1).render(base, parsed, output, dest, LIMITS)

    def spent_at(fresh: bool) -> float:
        return cpuspeed.least(run, times=1) / cpuspeed.speed(fresh=fresh)

    spent = cpuspeed.measured_again(spent_at, lambda spent: max(found) > spent / 3)
    return max(found), spent


@pytest.mark.parametrize("seed", SEEDS)
def test_a_placed_jpeg2000_or_bmp_is_priced_with_its_decode(
    tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Within a third of its CPU time (it was priced at a PNG's decode, or none)."""
    rng = random.Random(seed)
    base = tmp_path / "base.png"
    pyvips.Image.black(320, 240).new_from_image([200, 30, 30]).cast("uchar").pngsave(str(base))
    for case in range(2):
        mark = tmp_path / f"mark{case}"
        _placed_file(rng, mark)
        task = rng.choice(
            [
                f"watermark=file:{MARK},size:{rng.randint(5, 40)}",
                f"collage=files:[{MARK}],width:640",
            ]
        )
        segments = [task, "output=format:jpg"]
        seconds, spent = _estimated_and_spent(base, mark, segments, tmp_path / "o", monkeypatch)
        kind = Image.open(mark).format
        print(f"{kind} {task}: {seconds:.2f} s, took {spent:.2f}")
        assert seconds > spent / 3, (task, seconds, spent)
