"""``resize=...,fit:crop,align:faces`` whose cover enlarges the picture: the cover is
left lazy, so the cut computes its own rows only. A 54x135 photo to ``w:10000,h:171``
made its 10000x25000 cover in memory (750 MB) for the face finder: 10-13 s, against
0.06 s with ``align:center`` (found by the catalogue sweep). Sources and boxes from a
fixed seed; the cut is the same as the centred one (a gradient has no face)."""

from __future__ import annotations

import dataclasses
import random
import resource
from pathlib import Path

import pytest
import pyvips

from tests.processing.test_engine import LIMITS, render

SEED = 5213
LIMITS_HERE = dataclasses.replace(LIMITS, max_output_dimension=10_000)


def cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def cases(count: int) -> list[tuple[int, int, int, int]]:
    rng = random.Random(SEED)
    found = [(54, 135, 10_000, 171)]
    while len(found) < count:
        width, height = rng.randrange(20, 200), rng.randrange(20, 200)
        long, short = rng.randrange(6000, 10_001), rng.randrange(1, 300)
        found.append(
            (width, height, long, short) if rng.random() < 0.5 else (width, height, short, long)
        )
    return found


@pytest.mark.parametrize(("width", "height", "box_w", "box_h"), cases(4))
def test_an_enlarging_cover_is_not_made_whole_to_look_for_faces(
    tmp_path: Path, width: int, height: int, box_w: int, box_h: int
) -> None:
    xy = pyvips.Image.xyz(width, height)
    source = tmp_path / "s.jpg"
    (xy[0] * 255 / width).bandjoin([xy[1] * 255 / height, 90]).cast("uchar").jpegsave(str(source))
    box = f"resize=width:{box_w},height:{box_h},fit:crop"
    before = cpu()
    faced = render(tmp_path, source, f"{box},align:faces", "output=format:png", limits=LIMITS_HERE)
    spent = cpu() - before
    got = pyvips.Image.new_from_file(str(faced)).copy_memory()
    centred = pyvips.Image.new_from_file(
        str(render(tmp_path, source, box, "output=format:png", limits=LIMITS_HERE))
    )
    assert (got.width, got.height) == (box_w, box_h)
    assert (got - centred).abs().max() <= 2  # no face: the centre, as align:center
    assert spent < 2.0, f"{spent:.1f} s of CPU"
