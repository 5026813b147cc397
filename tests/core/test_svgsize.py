"""An SVG's drawn size from its root element (``core/svgsize.py``), against what libvips'
SVG loader (librsvg) draws, on generated roots: lengths in every unit librsvg takes and
some it does not, percentages, missing sides, ``viewBox`` with spaces or commas, zero
and negative sides, prologs. Where the root cannot tell (librsvg then draws the extent
of the shapes, or refuses), the size is None, never a wrong one. Probe seeds 5141-5143."""

from __future__ import annotations

import random

import pytest
import pyvips

from stowage.core import imagesize, svgsize

UNITS = ["", "", "px", "PX", "pt", "pc", "in", "cm", "mm", "em", "ex", "%", "q", "vw"]
#: The shape every generated document draws: librsvg's size without width, height and
#: viewBox is its extent.
SHAPE = '<rect x="3" y="2" width="17" height="9"/>'


def length(rng: random.Random) -> str | None:
    if rng.random() < 0.2:
        return None
    number = rng.choice(
        [str(rng.randint(0, 900)), f"{rng.uniform(0, 900):.2f}", f"{rng.randint(1, 9)}e2",
         f".{rng.randint(1, 9)}", "-5", "abc", ""]
    )  # fmt: skip
    space = rng.choice(["", " "])
    return f"{space}{number}{rng.choice(UNITS)}{space}"


def view_box(rng: random.Random) -> str | None:
    if rng.random() < 0.35:
        return None
    sides = [rng.choice([str(rng.randint(1, 900)), f"{rng.uniform(0.5, 900):.1f}", "0", "-4"])
             for _ in range(2)]  # fmt: skip
    origin = [str(rng.randint(-10, 10)) for _ in range(2)]
    return rng.choice([" ", ",", ", "]).join(origin + sides)


def document(rng: random.Random) -> bytes:
    given = (("width", length(rng)), ("height", length(rng)), ("viewBox", view_box(rng)))
    attributes = [f'{name}="{value}"' for name, value in given if value is not None]
    rng.shuffle(attributes)
    prolog = rng.choice(
        ["", '<?xml version="1.0" encoding="UTF-8"?>\n', "\ufeff", "<!-- a comment -->\n",
         '<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" '
         '"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">\n']
    )  # fmt: skip
    root = f'<svg xmlns="http://www.w3.org/2000/svg" {" ".join(attributes)}>{SHAPE}</svg>'
    return (prolog + root).encode()


@pytest.mark.parametrize("seed", [5141, 5142])
def test_the_size_is_the_one_librsvg_draws(seed: int) -> None:
    rng = random.Random(seed)
    told = 0
    for _ in range(200):
        data = document(rng)
        try:
            drawn = pyvips.Image.new_from_buffer(data, "")
            engine: tuple[int, int] | None = (drawn.width, drawn.height)
        except pyvips.Error:  # a zero side: "bad dimensions"
            engine = None
        found = svgsize.drawn_size(data)
        assert imagesize.dimensions(data) == found
        if found is None:  # the root cannot tell: the shapes' extent, or refused
            assert engine in ((17, 9), None), data
        else:
            assert found == engine, data
            told += 1
    assert told > 25  # about a quarter to a third of them


@pytest.mark.parametrize(
    "data",
    [
        b'<!DOCTYPE svg [<!ENTITY a "1">]><svg width="&a;0" height="5"/>',
        b"<!DOCTYPE svg [<!ELEMENT svg ANY>]><svg width='10' height='5'/>",
        b'<?xml version="1.0" encoding="utf-7"?><svg width="5" height="5"/>',
        b'<html><svg width="5" height="5"/></html>',
        b'<svg width="1e400" height="5"/>',
        b'<svg viewBox="0 0 inf 5"/>',
        b'<svg width="5" height="5"',
        b"<",
    ],
)
def test_what_the_engine_refuses_or_cannot_tell_has_no_size(data: bytes) -> None:
    assert svgsize.drawn_size(data) is None
    assert imagesize.dimensions(data) is None
    assert imagesize.read_here(data) is None
