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

A fill scans its outline's edges the same way: a polygon of 1,000 random vertices
across 1000x1000 filled took 0.2 s, of 3,000 1.5 s, of 10,000 9.3 s (about 1 us a
crossing, as the stroke's), where a random walk of 10,000 short steps took 0.023 s;
they were priced 20 us a point, so a 47 KB polygon of 6,000 vertices was estimated
at 0.27 s and took 5.6 s. Many small polygons measured 2.3-3.8 us a point at 10-40 px
a side, 27 us at 1,000: about 0.06 us a pixel of edge (``FILL_EDGE``) besides the
point (``svgdraw.POINT``), and 1.5 us a crossing (``FILL_CROSSING``). With ``fill="none"``
too: such a polyline of 1,500 vertices drew nothing in 0.43 s, filled in 0.50 s
(librsvg measures the outline's extents).

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
FILL_EDGE = 0.06e-6  # seconds a pixel of a filled outline's edges, at the scale drawn
FILL_CROSSING = 1.5e-6  # seconds each place a filled outline crosses itself
#: The share of a fill's crossings that grows with the scale it is drawn at: 1,000 and
#: 2,500 random vertices on 1000x1000 and 1000x300 drawn at 0.3 and 0.1 of their size
#: took 0.43-0.63 and 0.24-0.39 of their time at their own (2026-12-07, one thread); at
#: three and six times, 1.9-8.5 and 2.6-11 times (priced at their own size, a polygon of
#: 3,000 vertices on 1000x1000 drawn at 3000 px was 4.8 times under)
SCANNED = 0.85
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
    crossed = crossings(line, abs(svgdash.width(painted)))
    return Cost(CROSSING * crossed, per_side=EDGE * line.length / _side(canvas) * 1e3)


def fill(line: Outline, canvas: tuple[float, float]) -> Cost:
    """A path's, a polygon's or a polyline's edges, by the canvas' side, and its
    crossings, filled or not: most of their time by the scale drawn at (``SCANNED``)."""
    if line.length <= 0:
        return Cost()
    crossed = FILL_CROSSING * crossings(line, 0.0)
    per_side = (FILL_EDGE * line.length + SCANNED * crossed) / _side(canvas) * 1e3
    return Cost((1 - SCANNED) * crossed, per_side=per_side)


def crossings(line: Outline, width: float) -> float:
    """Where ``line`` crosses itself: the needles' estimate (its length squared over its
    box, as needles thrown on a table cross), held to one for each pair of segments."""
    box = max(line.box[0], width, 1.0) * max(line.box[1], width, 1.0)
    return min(line.length**2 / (math.pi * box), line.vertices**2 / 2)


def _side(canvas: tuple[float, float]) -> float:
    return math.sqrt(max(canvas[0] * canvas[1], 1.0))


def text(glyphs: float, size: float, painted: Mapping[str, str]) -> Cost:
    """Glyphs of text at ``size``, stroked and dashed as ``painted`` says."""
    if not glyphs or not stroked(painted):
        return Cost()
    dashed = svgdash.seconds(glyphs * size * GLYPH_OUTLINE, painted)
    return Cost(glyphs * GLYPH_STROKE + dashed)
