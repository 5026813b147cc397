"""A size filestack-js's schema lets be 0 (``params.Whole(zero_unset=True)``: resize's,
collage's and smart_crop's sides, watermark's size) is not given: the task parses,
renders and is sized by the cost estimate exactly as with the option left out.
``collage=width:120,height:0`` was parsed, then refused by the job ("collage needs width
and height", naming ``collage.width`` whichever side was 0): 44 of 44 filestack-js-built
URLs with a 0 side."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import pyvips

from stowage import errors
from stowage.processing import catalogue, chain, grammar, params
from tests.processing.test_composite import render

MARK, CELL = "M" * 20, "C" * 20
#: The sizes of the table that the schema lets be 0, found by reading the table.
ZERO_UNSET = sorted(
    (spec.name, param.name)
    for spec in catalogue.TABLE.values()
    for param in spec.params
    if isinstance(param.check, params.Whole) and param.check.zero_unset
)
SEEDS = range(5111, 5116)


def test_the_sizes_the_docs_name_are_the_ones_found() -> None:
    named = {("resize", "width"), ("resize", "height"), ("collage", "width")}
    named |= {("collage", "height"), ("watermark", "size")}
    assert named | {("smart_crop", "width"), ("smart_crop", "height")} <= set(ZERO_UNSET)


def _gradient(path: Path, width: int, height: int, seed: int) -> Path:
    """A picture whose pixels all differ, so that any change of size or place shows."""
    xy = pyvips.Image.xyz(width, height)
    image = (xy[0] * 255 / width).bandjoin([xy[1] * 255 / height, (xy[0] + xy[1] + seed) % 256])
    image.cast("uchar").write_to_file(str(path))
    return path


def _others(task: str, name: str, rnd: random.Random) -> list[str]:
    """Random valid options of ``task`` besides ``name``: what the case keeps either way."""
    if task == "resize":
        other = "height" if name == "width" else "width"
        fit = rnd.choice(["clip", "crop", "scale", "max"])
        return [f"{other}:{rnd.randint(1, 150)}", f"fit:{fit}"]
    if task == "smart_crop":
        other = "height" if name == "width" else "width"
        given = [f"{other}:{rnd.randint(1, 150)}"] if rnd.random() < 0.6 else []
        return [f"mode:{rnd.choice(['auto', 'object'])}", *given]
    if task == "collage":
        other = "height" if name == "width" else "width"
        given = [f"{other}:{rnd.randint(1, 200)}"] if rnd.random() < 0.6 else []
        return [f"files:[{CELL}]", f"margin:{rnd.randint(1, 30)}", *given]
    assert task == "watermark", f"{task}.{name}: add how to build a case for it"
    where = rnd.choice(["top", "middle", "bottom"]), rnd.choice(["left", "center", "right"])
    return [f"file:{MARK}", f"position:[{where[0]},{where[1]}]"]


def _outcome(tmp: Path, source: Path, segment: str) -> tuple[object, ...]:
    sources = ((MARK, tmp / "mark.png"), (CELL, tmp / "cell.png"))
    try:
        out = render(tmp, source, [segment], sources)
    except errors.StowageError as exc:
        return ("refused", type(exc).__name__, str(exc), getattr(exc, "parameter", None))
    return (out.width, out.height, out.bands, out.write_to_memory())


@pytest.mark.parametrize(("task", "name"), ZERO_UNSET)
@pytest.mark.parametrize("seed", SEEDS)
def test_zero_is_the_option_left_out(tmp_path: Path, task: str, name: str, seed: int) -> None:
    rnd = random.Random(seed)
    width, height = rnd.randint(20, 160), rnd.randint(20, 160)
    source = _gradient(tmp_path / "a.png", width, height, seed)
    _gradient(tmp_path / "mark.png", rnd.randint(5, 60), rnd.randint(5, 60), seed + 1)
    _gradient(tmp_path / "cell.png", rnd.randint(5, 90), rnd.randint(5, 90), seed + 2)
    others = _others(task, name, rnd)
    rnd.shuffle(others)
    zero = rnd.choice(["0", "0.0", "0.4", "00"])
    with_zero = f"{task}={','.join([*others, f'{name}:{zero}'])}"
    without = f"{task}={','.join(others)}"
    assert grammar.parse_task(with_zero) == grammar.parse_task(without)
    got = _outcome(tmp_path, source, with_zero)
    assert got == _outcome(tmp_path, source, without), with_zero
    assert got[0] != "refused", (with_zero, got)
    # the cost estimate's size is the rendered one
    parsed = chain.parse([with_zero]).tasks[0]
    sized = catalogue.TABLE[task].size
    assert (sized(parsed, width, height) if sized else (width, height)) == got[:2], with_zero


@pytest.mark.parametrize("seed", range(5116, 5118))
def test_a_collage_side_not_given_is_the_images(tmp_path: Path, seed: int) -> None:
    """Neither side, one side, or a 0 side: the canvas takes the image's side (the image
    as the tasks before the collage made it)."""
    rnd = random.Random(seed)
    width, height = rnd.randint(20, 160), rnd.randint(20, 160)
    source = _gradient(tmp_path / "a.png", width, height, seed)
    _gradient(tmp_path / "cell.png", 30, 20, seed)
    wide = rnd.randint(1, 200)
    cases = {
        f"collage=files:[{CELL}]": (width, height),
        f"collage=files:[{CELL}],width:0,height:0": (width, height),
        f"collage=files:[{CELL}],w:{wide},h:0": (wide, height),
        f"collage=files:[{CELL}],height:{wide},width:0": (width, wide),
    }
    for segment, size in cases.items():
        out = render(tmp_path, source, [segment], ((CELL, tmp_path / "cell.png"),))
        assert (out.width, out.height) == size, segment
    cells = ((CELL, tmp_path / "cell.png"),)
    flipped = render(tmp_path, source, ["rotate=deg:90", f"collage=files:[{CELL}]"], cells)
    assert (flipped.width, flipped.height) == (height, width)
