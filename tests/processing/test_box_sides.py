"""``resize`` into a box (both sides given, ``fit:clip`` or ``max``): the side that binds
is met and the other is derived from it as from that side alone, whatever the format
decodes smaller on load and whichever path renders it (libvips, Pillow). A 186x74 JPEG
into ``w:19,h:387`` was 19x7 while its PNG, ``resize=w:19`` and the size the cost
estimate declares were 19x8 (found by the catalogue sweep, tests/api/test_transform_sweep.py)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import pyvips

from stowage.processing import catalogue, chain
from tests.processing.test_engine import render

SEED = 5212


def cases(count: int) -> list[tuple[int, int, int, int, str]]:
    """Sources and boxes that shrink them (the shrink-on-load's ground), from a fixed seed;
    the sweep's case first."""
    rng = random.Random(SEED)
    found = [(186, 74, 19, 387, "max")]
    while len(found) < count:
        width, height = rng.randrange(2, 900), rng.randrange(2, 900)
        box_w, box_h = rng.randrange(1, width + 1), rng.randrange(1, 2 * height)
        if rng.random() < 0.5:  # the height binds as often as the width
            width, height, box_w, box_h = height, width, box_h, box_w
        found.append((width, height, box_w, box_h, rng.choice(["clip", "max"])))
    return found


@pytest.mark.parametrize(("width", "height", "box_w", "box_h", "fit"), cases(40))
def test_a_box_gives_every_format_the_size_of_its_binding_side_alone(
    tmp_path: Path, width: int, height: int, box_w: int, box_h: int, fit: str
) -> None:
    xy = pyvips.Image.xyz(width, height)
    image = (xy[0] % 256).bandjoin([xy[1] % 256, 90]).cast("uchar")
    box = f"resize=width:{box_w},height:{box_h},fit:{fit}"
    task = chain.parse([box]).tasks[0]
    declared = catalogue.TABLE["resize"].size(task, width, height)  # type: ignore[misc]
    by_width = width / box_w >= height / box_h
    alone = f"resize=width:{box_w}" if by_width else f"resize=height:{box_h}"
    sizes = {}
    for suffix in (".png", ".jpg", ".webp"):  # PNG is never shrunk on load
        source = tmp_path / f"s{suffix}"
        image.write_to_file(str(source))
        for segment in (box, alone):
            for pillow in (True, False):
                made = pyvips.Image.new_from_file(
                    str(render(tmp_path, source, segment, pillow=pillow))
                )
                sizes[(suffix, segment, pillow)] = (made.width, made.height)
    assert set(sizes.values()) == {declared}, sizes
