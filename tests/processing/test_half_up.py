"""Every pixel count the engine derives is rounded half up (``params.half_up``), as the
options are: Python's ``round()`` rounds half to even, so ``partial_pixelate=amount:2.5``
pixelated in blocks of 2 while ``pixelate=amount:2.5`` used 3, a polaroid frame of 6% of
a 75-px side was 4 px (4.5 rounded to even), and ``animate=width:W`` derived the other
side to even where ``resize=width:W`` rounds it up. The cases are generated at .5."""

from __future__ import annotations

import ast
import random
from fractions import Fraction
from pathlib import Path

import pytest

from stowage.processing import catalogue, composite, effects, effects_ascii, grammar
from tests.processing.test_composite import render
from tests.processing.test_effects import gradient

SEEDS = range(5118, 5120)
PROCESSING = Path(__file__).resolve().parents[2] / "src/stowage/processing"


@pytest.mark.parametrize("seed", SEEDS)
def test_partial_pixelate_rounds_a_half_amount_up(tmp_path: Path, seed: int) -> None:
    rnd = random.Random(seed)
    source = tmp_path / "a.png"
    gradient(rnd.randint(60, 120), rnd.randint(60, 120)).write_to_file(str(source))
    for _ in range(4):
        whole = rnd.randint(2, 40)
        box = f"objects:[[0,0,{rnd.randint(20, 60)},{rnd.randint(20, 60)}]],blur:0"
        half = f"partial_pixelate={box},amount:{whole}.5"
        up = f"partial_pixelate={box},amount:{whole + 1}"
        assert grammar.parse_task(half) == grammar.parse_task(up)
        made, expected = render(tmp_path, source, [half], ()), render(tmp_path, source, [up], ())
        assert made.write_to_memory() == expected.write_to_memory(), half
        # and as pixelate reads the same value
        assert grammar.parse_task(f"pixelate=amount:{whole}.5").get("amount") == whole + 1


@pytest.mark.parametrize("seed", SEEDS)
def test_a_polaroid_frame_at_half_a_pixel_is_rounded_up(tmp_path: Path, seed: int) -> None:
    rnd = random.Random(seed)
    source = tmp_path / "a.png"
    for _ in range(3):
        short = 25 + 50 * rnd.randint(0, 5)  # 6% of it ends in .5: 1.5, 4.5, 7.5, ...
        other = short + rnd.randint(0, 120)
        width, height = (short, other) if rnd.random() < 0.5 else (other, short)
        side = int(Fraction(short * 6, 100) + Fraction(1, 2))
        gradient(width, height).write_to_file(str(source))
        made = render(tmp_path, source, ["polaroid=rotate:0"], ())
        assert (made.width, made.height) == (width + 2 * side, height + 5 * side), (width, height)
        spec = catalogue.TABLE["polaroid"]
        assert spec.size is not None
        assert spec.size(grammar.parse_task("polaroid"), width, height) == (
            made.width,
            made.height,
        )
        assert effects.polaroid_frame(width, height) == (max(2, side), 4 * max(2, side))


@pytest.mark.parametrize("seed", SEEDS)
def test_animate_derives_a_side_as_resize_does(seed: int) -> None:
    """A frame given one side derives the other as ``resize`` does, at .5 too."""
    rnd = random.Random(seed)
    resize = catalogue.TABLE["resize"].size
    assert resize is not None
    for _ in range(200):
        width, height = rnd.randint(2, 900), rnd.randint(2, 900)
        wide, tall = rnd.randint(1, 1800), rnd.randint(1, 1800)
        for side in (f"width:{wide}", f"height:{tall}"):
            frame = composite.frame_size(grammar.parse_task(f"animate={side}"), width, height)
            assert frame == resize(grammar.parse_task(f"resize={side}"), width, height), (
                width,
                height,
                side,
            )
    # and exactly at half a pixel: 2w x (2k+1) to width w is k+0.5 rows, k+1
    for _ in range(50):
        half, rows = rnd.randint(1, 450), rnd.randint(0, 400)
        task = grammar.parse_task(f"animate=width:{half}")
        assert composite.frame_size(task, 2 * half, 2 * rows + 1) == (half, rows + 1)


@pytest.mark.parametrize("seed", SEEDS)
def test_ascii_rows_at_half_a_row_are_rounded_up(seed: int) -> None:
    rnd = random.Random(seed)
    for _ in range(100):
        columns, width = rnd.randint(10, 100), rnd.randint(20, 400)
        rows = rnd.randint(1, 200)
        height = Fraction((2 * rows + 1) * width, 2 * columns) * 2  # k+0.5 rows exactly
        if height.denominator != 1:
            continue
        assert effects_ascii.grid_size(width, int(height), columns)[1] == min(500, rows + 1)


#: ``round(x)`` (to a whole number) where it rounds no pixel count of a result: a
#: duration, a quality, a statistic, a private working copy's size.
ROUND_KEPT = {
    ("effects_regions.py", "_shape"),  # the mask's working copy, enlarged to the box
    ("effects_restore.py", "percent"),  # a count of pixels for a percentile, not a size
    ("faces.py", "windows"),  # OpenCV's pyramid as it rounds (cvRound: half to even)
    ("ffmpeg.py", "*"),
    ("jpegquality.py", "*"),
    ("pdfcolour.py", "_has_colour"),  # the bitmap searched for colour, not shown
}


def _whole_rounds(tree: ast.Module) -> list[tuple[str, int]]:
    found = []
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(function):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "round"
                and len(node.args) == 1
            ):
                found.append((function.name, node.lineno))
    return found


def test_no_size_is_rounded_half_to_even() -> None:
    """No ``round(x)`` in processing/ but where it rounds no pixel count (``ROUND_KEPT``)."""
    left = []
    for path in sorted(PROCESSING.glob("*.py")):
        for function, line in _whole_rounds(ast.parse(path.read_text(encoding="utf-8"))):
            if not {(path.name, "*"), (path.name, function)} & ROUND_KEPT:
                left.append(f"{path.name}:{line} in {function}")
    assert left == [], "use params.half_up"
