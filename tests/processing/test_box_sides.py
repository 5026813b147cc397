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


def halves(count: int) -> list[tuple[int, int, str]]:
    """Sources and resizes whose derived side is exactly k+0.5 pixels, from a fixed seed:
    one side given or a box that it binds, every fit, enlarged or made smaller. Sized
    from the scale alone (half up), 4000x3000 to width 302 was declared 302x227 where
    libvips makes 302x226 (shrunk, its scale's round trip leaves 226.4999...; found by
    test_half_up with another seed). Enlarged, libvips multiplies by the scale instead:
    through the round trip, 48x372 to width 98 was declared 98x759 and 3x2 to height 75
    112x75 where libvips makes 98x760 and 113x75, and 36x279 to width 98 98x760 where
    it makes 98x759 (25 of 383 enlarged ties; each path was then scaled a second time to
    the declared size; found by test_animate with another seed)."""
    rng = random.Random(5500)
    found = [(3, 2, "resize=height:75"), (400, 300, "resize=width:302")]
    found += [(48, 372, "resize=width:98"), (279, 36, "resize=height:98")]
    while len(found) < count:
        have, other = 2 * rng.randint(1, 150), rng.randint(1, 300)
        given = [
            g for g in range(1, 700) if (other * g) % have == have // 2 and other * g < 3000 * have
        ]
        if not given:
            continue
        side = rng.choice(given)
        derived = side * other // have + 1
        by_width = rng.random() < 0.5
        width, height = (have, other) if by_width else (other, have)
        parts = [f"width:{side}" if by_width else f"height:{side}"]
        if rng.random() < 0.4:  # a box whose other side is larger: the given side binds
            parts.append(f"height:{derived + 5}" if by_width else f"width:{derived + 5}")
            parts.append(f"fit:{rng.choice(['clip', 'max'])}")
        else:
            parts.append(f"fit:{rng.choice(['clip', 'max', 'scale', 'crop'])}")
        found.append((width, height, "resize=" + ",".join(parts)))
    return found


@pytest.mark.parametrize(("width", "height", "segment"), halves(30))
def test_a_side_derived_at_half_a_pixel_is_declared_as_made(
    tmp_path: Path, width: int, height: int, segment: str
) -> None:
    xy = pyvips.Image.xyz(width, height)
    image = (xy[0] % 256).bandjoin([xy[1] % 256, 90]).cast("uchar")
    declared = catalogue.TABLE["resize"].size(chain.parse([segment]).tasks[0], width, height)  # type: ignore[misc]
    sizes = {}
    for suffix in (".png", ".jpg"):
        source = tmp_path / f"s{suffix}"
        image.write_to_file(str(source))
        for pillow in (True, False):
            made = pyvips.Image.new_from_file(str(render(tmp_path, source, segment, pillow=pillow)))
            sizes[(suffix, pillow)] = (made.width, made.height)
    assert set(sizes.values()) == {declared}, sizes
    task = chain.parse([segment]).tasks[0]
    if task.get("fit", "clip") == "clip":  # and as libvips sizes it alone, no second pass
        box_w, box_h = task.get("width") or 10**6, task.get("height") or 10**6
        alone = image.thumbnail_image(box_w, height=box_h, no_rotate=True)
        assert (alone.width, alone.height) == declared, (alone.width, alone.height)
