"""What a stroke costs librsvg (cairo), for the cost estimate (``svgdraw``), for a shape
or text whose ``stroke`` (inherited, from a ``<use>`` too) is painted.

Cairo strokes a shape by tessellating its outline and scanning each edge: measured
(librsvg through libvips 8.18, one thread), 20 polylines of 100 random vertices on
500x500 took 0.18-0.33 s at any width (2 to 150) and join (miter, round, bevel), 0.6 us
for each pixel of the line drawn (``EDGE``, grows with the scale it is drawn at); a
path of 3,000 random lines across 1200x800 drawn at 400 px took 1.06 s, of 1,000 0.21
s, for the lines' crossings (the sweep meets each: ``CROSSING``, about its length
squared over its box, as needles thrown on a table cross); a walk of 3,000 steps of
10 units, which barely crosses itself, 0.025 s. All were priced 0.04-0.16 s (their
points only): 2.2 to 6.5 times low.

Stroked text draws each glyph's outline: 400 lines of 20 glyphs at 20-300 px took
110-220 us a glyph stroked, against 30-85 plain (``GLYPH_STROKE``); dashed, a dash
along each glyph's outline, about half its font size long (``svgdash``: 1,000 px glyphs
dashed ``1 1`` took 620 us each).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from stowage.processing import svgdash
from stowage.processing.svgpath import Outline
from stowage.processing.svgprice import Cost

EDGE = 0.6e-6  # seconds a pixel of stroked line, at the scale it is drawn
CROSSING = 1.0e-6  # seconds each place the line crosses itself
GLYPH_STROKE = 150e-6  # seconds each glyph's outline stroked
GLYPH_OUTLINE = 0.5  # a glyph's dashed outline, in font sizes
_UNPAINTED = frozenset({"none", "transparent", ""})


def stroked(painted: Mapping[str, str]) -> bool:
    return painted.get("stroke", "none").strip().lower() not in _UNPAINTED


def shape(line: Outline, painted: Mapping[str, str], canvas: tuple[float, float]) -> Cost:
    """A stroked shape's edges, by the canvas' side (``canvas`` in user units), and its
    crossings."""
    if not stroked(painted) or line.length <= 0:
        return Cost()
    width = abs(svgdash.width(painted))
    side = math.sqrt(max(canvas[0] * canvas[1], 1.0))
    # the needles' estimate, held to a crossing for each pair of segments
    box = max(line.box[0], width, 1.0) * max(line.box[1], width, 1.0)
    crossings = min(line.length**2 / (math.pi * box), line.vertices**2 / 2)
    return Cost(CROSSING * crossings, per_side=EDGE * line.length / side * 1e3)


def text(glyphs: float, size: float, painted: Mapping[str, str]) -> Cost:
    """Glyphs of text at ``size``, stroked and dashed as ``painted`` says."""
    if not glyphs or not stroked(painted):
        return Cost()
    dashed = svgdash.seconds(glyphs * size * GLYPH_OUTLINE, painted)
    return Cost(glyphs * GLYPH_STROKE + dashed)
