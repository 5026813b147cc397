"""What librsvg's drawing of an SVG will cost, gathered as the rewrite reads it
(``svg._Writer``), for the cost estimate (``cost.estimate``'s ``drawing``).

The estimate priced an SVG by its canvas and its ``data:`` images; what librsvg draws
was unseen, and a 286-byte SVG (an ``feMorphology`` of radius 500 on 4000x8000) ran to
the 30 s deadline on every request. Here, without drawing anything:

- each element with a ``filter``: per primitive of that filter, its rate a megapixel
  of the filter region (the element's box for a ``rect``, ``circle``, ``ellipse``,
  grown by the filter's region; the canvas otherwise), and the canvas-sized layer
  librsvg makes for it; areas are multiplied by the ``scale`` and ``matrix``
  transforms of the element and those around it, up to the canvas (``Cost.ceiling``);
- each drawn element, ``<use>`` instance, point of a ``path``/``polygon``/``polyline``
  and glyph of text; ``<use>`` fan-out is counted, not expanded: each element's cost
  (its own and its children's, a ``use``'s target's) is computed once, memoised, so a
  nest of ``use`` 10 wide and 6 deep is 10^6 instances counted in microseconds;
- a translucent group (``opacity``, ``mask``, ``clip-path``): a layer.
- what an element draws again for each element referring to it (``_referred``): a
  clip path's or a mask's content for each element clipped or masked, a pattern's for
  each shape it fills or strokes (inherited from groups), a marker's at each vertex
  (200 rects clipped by 200 polygons took 17.8 s, priced 0.19 s when counted once),
  an element an ``feImage`` names for each element its filter is on.

Besides, each with its measurements: filters (``svgfilter``: an ``feMorphology``'s
window at the scale drawn), strokes and stroked text (``svgstroke``), a path's filled
area (``svgpath``), nested ``<svg>`` viewports (``svgnest``), and what a ``<use>`` gives
what it draws (``svgwalk``).

The result is ``Cost`` (``svgprice``): seconds besides the canvas, seconds a megapixel
of it (a filter region's fraction of the canvas times its rate), and seconds a
thousand pixels of its side (a stroke's length). The rates were measured with
librsvg through pyvips 3.x (libvips 8.18), one thread, on generated SVGs (1000x1000
unless said; CPU time of ``new_from_file(...).avg()`` less an empty canvas's, 0.006 s
a megapixel):

- feGaussianBlur 0.25-0.34 s a megapixel of region whatever its stdDeviation (1 to
  1000: box blurs); a region past the canvas is clipped to it; feDropShadow 0.26;
- feTurbulence 0.15 (1 octave), 0.23 (3), 0.37 (6), 0.48 (10): 0.11 + 0.037 an octave;
- feMorphology (on 300x300 and 500x500): 0.1 at radius 1, 0.35 at 3, 0.93 at 5, 3.05
  at 10, 20, 40 and 100: librsvg's window grows to about 10 pixels a side, then no
  more; 0.59 at radius "40 1": about 0.007 a cell of the (2rx+1)(2ry+1) window;
- feConvolveMatrix 0.37 (order 3), 0.67 (5), 1.83 (9), 4.79 (15): 0.15 + 0.02 a cell;
- feDisplacementMap 0.75, feSpecularLighting 0.19, feDiffuseLighting 0.15,
  feColorMatrix 0.13, feComponentTransfer 0.12; feFlood, feOffset, feTile 0.01;
- a filtered 200x200 rect on 2000x2000: 0.06 s over the empty canvas: 0.015 s a
  megapixel of canvas for each filtered element, however small;
- measured again on 2026-12-02 (pyvips-binary 8.18.7, the machine in a faster state:
  Pillow's thumbnail floor of scenario 11 at 32 ms): feGaussianBlur 0.11-0.18 s a
  megapixel (stdDeviation 1 to 1000, 1000 and 2000 a side), a filtered element
  0.005-0.008 s a megapixel of canvas. Blurs and filtered elements are priced between
  the two (0.22 and 0.01): the generated cases' CPU time had come within 4.1 times under
  the estimate, past the test's bound of 4, and the machine's speed varies by about two;
- 20,000 small circles 0.33 s (16 us each); 1,000 polygons of 20 random points across
  the canvas 1.1 s, of 5 points 0.13 s (priced 20 us a point, within 3x of both); a
  polygon's fill is priced over its area (``FILL``, its edges apart): 2,000
  translucent triangles across 2000x2000 took 3.5 s, estimated 0.73 by their points;
- text: 1,000 lines of 14 glyphs at 12 px 0.17 s (12 us a glyph), at 10-400 px 0.84 s
  (60 us a glyph at 205 px on average); 2,438 lines at 10-400 px drawn at a fifth of
  their size took 1.8 s, about the same a glyph: the glyphs are laid out at the
  document's size. Measured again (2026-12-03, ``cpuspeed``'s state): 400 lines of 20
  glyphs at 20 px 0.25-0.45 s, 4,000 lines of 2 glyphs 0.6-0.8 s, 100 lines of 20 at
  1,000 px 0.1-0.23 s: 0.1 ms a run of text laid out (``TEXT_RUN``), 25 us a glyph and
  0.08 us for each unit of the font size (12 and 0.25 had priced small text 2.7 times
  low, 1,000 px text 2.4 times high); stroked and dashed text: ``svgstroke``;
- ``<use>`` of a translucent 50x50 rect, 10^3 instances 0.30 s, 10^4 2.9 s: the
  layer of each (``LAYER_AREA``); 500 ``<use>`` of a plain rect took 2 ms (``USE``);
  1,000 translucent circles of radius 100-500 0.62 s;
- a pattern of 2x2 tiles over 2000x2000: 0.04 s (the tile is drawn once): priced as a
  fill.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from stowage.processing import svgarea, svgcss, svgfilter, svgnest, svgpath, svgwalk
from stowage.processing.svgfilter import Filter
from stowage.processing.svgprice import Cost as Cost  # what a drawing costs, here
from stowage.processing.svgrefs import NUMBER, PATH_COMMAND, URL_ID
from stowage.processing.svgwalk import GRADIENTS, Node

ELEMENT = 16e-6  # seconds, each drawn element
POINT = 3e-6  # each point of a path, polygon or polyline (its edges: ``svgstroke``)
GLYPH = (25e-6, 0.08e-6)  # each character of text, and for each unit of its font size
TEXT_RUN = 0.1e-3  # each run of characters, laid out
FONT_SIZE = 16.0  # when no element says
USE = 10e-6  # each <use> instance (what it draws is priced besides)
LAYER = 0.2e-3  # each translucent, masked or clipped element
#: And a megapixel of the canvas for each: librsvg draws such an element on a surface of
#: the canvas's size and composites it, however small the element. One thread, 200
#: circles each in a layer: 0.22-0.25 ms a megapixel a layer up to 2000x2000 (0.35-0.8
#: when each is 800 wide), 1.3-2.5 at 3000x3000 (``svgprice.crowded``). Unpriced, 500
#: canvas-wide ones on 9 MP were estimated at 3.6 s, took 26 s and timed out (seeds
#: 9709, 9716, 5449); at 1.5 ms a megapixel whatever the canvas, 1,000 translucent
#: rects drawn through ``<use>`` on 1000x1000 were estimated at 1.33 s and took 0.09.
LAYER_AREA = 0.35e-3
#: A megapixel of a shape's area filled: the blend alone. The rows its edges span are
#: priced apart: a polygon's or a path's by ``svgstroke``, a rect's, circle's or
#: ellipse's at ``ROW`` each. One thread, 2026-12-06: 100 translucent squares over
#: 2000x2000 0.17 s (0.42 ms a megapixel), opaque ones next to nothing; 1,000 random
#: 4-point polygons 0.25 s opaque and 0.49 translucent on 1000x1000, 0.7 and 2.0 on
#: 3000x3000; 1,000 circles of radius a tenth to half the side 0.21 and 0.41 on
#: 1000x1000, 0.7 and 2.0 on 3000x3000: 0.33-0.48 us a row and 0.5 ms a megapixel of
#: area (translucent). At 2 ms a megapixel of their box, circles were priced up to 10
#: times over on large canvases, rotated rects 3 times under.
FILL = 0.0006
ROW = 0.35e-6
#: A megapixel of a shape's box filled with a gradient, for each of its stops past
#: ``FREE_STOPS`` (a radial one: 0.05 s at 200 stops, 0.96 at 2,000, 9.0 at 20,000 a
#: megapixel; a linear one at most 0.2: priced as radial; a gradient's ``href`` gives
#: its stops to another).
STOP, FREE_STOPS = 0.5e-3, 64
#: Elements whose content is drawn only where something refers to them.
UNDRAWN = frozenset(
    {"defs", "symbol", "pattern", "clippath", "mask", "marker", "filter", "style"}
    | {"lineargradient", "radialgradient", "title", "desc", "metadata"}
)
SHAPES = frozenset({"rect", "circle", "ellipse", "line", "path", "polygon", "polyline"})
SHAPES |= {"image", "text", "tspan", "textpath"}
BOXED = frozenset({"rect", "circle", "ellipse"})  # filled over their box
CURVED = frozenset({"circle", "ellipse"})  # a quarter of their box is not filled
POINTED = frozenset({"polygon", "polyline"})  # given by ``points``
FILLED = BOXED | {"polygon", "path"}  # over their box or area (``svgarea``, ``svgpath``)
#: What makes a drawing other than areas of flat paint (``Drawing.plain``): a filter's
#: noise or blur, a pattern's tiles resampled, a gradient's colours, an image's pixels.
UNPLAIN = GRADIENTS | {"filter", "pattern", "image"}
_TRANSFORM = re.compile(r"(scale|matrix)\s*\(([^)]*)\)")
_FONT_SIZE = re.compile(r"font-size\s*:\s*([^;]+)")
_STYLED_FILTER = re.compile(r"filter\s*:\s*url\(\s*['\"]?#([^'\")\s]+)", re.I)


class Drawing:
    """The elements of one SVG, as the rewrite reads them (``start``, ``end``)."""

    def __init__(self) -> None:
        self._nodes: list[Node] = []
        self._open: list[int] = []
        self._ids: dict[str, int] = {}
        self._filters: dict[str, Filter] = {}
        self._filter: Filter | None = None  # the <filter> being read
        self._filter_depth = -1  # and its depth
        self._sizes: list[float] = []  # the font size of each open element
        self._canvas = (0.0, 0.0)  # in user units
        self._pixels = 0.0  # the document's size, in pixels (its width x height)
        self._css = svgcss.Rules()
        self._costs: dict[float, Cost] = {}  # by the scale drawn

    def style(self, css: str) -> None:
        """The text of a ``<style>`` element: its rules' filters, clips, masks, patterns
        and markers are drawn as named in attributes (``svgcss``)."""
        self._css.add(css)

    def start(self, local: str, attributes: Mapping[str, str]) -> None:
        if not self._nodes:
            self._canvas = _canvas(attributes)
            self._pixels = svgnest.pixels(attributes, self._canvas)
        numbers = svgarea.numbers_in(attributes.get("points", "")) if local in POINTED else None
        own = self._own(local, attributes, numbers)
        node = Node(own, local, attributes, undrawn=local in UNDRAWN)
        if numbers is not None:  # read once, for the fill and the outline (``svgwalk``)
            node.outline = svgpath.of_points(numbers, closed=local == "polygon")
        if local == "use" or local in GRADIENTS:
            href = attributes.get("href", "")
            node.target = href[1:] if href.startswith("#") else None
        gradient = self._nodes[self._open[-1]] if self._open else None
        if local == "stop" and gradient is not None and gradient.local in GRADIENTS:
            gradient.stops += 1
            if gradient.stops > FREE_STOPS:
                gradient.own = gradient.own + Cost(fill=STOP, fill_ceiling=STOP)
        styled = _STYLED_FILTER.search(attributes.get("style", ""))
        match = styled or URL_ID.match(attributes.get("filter", "").strip())
        node.region = svgarea.box(self._canvas, local, attributes)
        if match:
            node.filter = match.group(1)
        if "transform" in attributes:
            node.area = _area(attributes["transform"])
        if local == "svg" and self._nodes:  # a nested viewport scales what it holds
            node.area = min(node.area * svgnest.area(attributes, self._canvas), 1e12)
        if local == "filter":
            self._filter = svgfilter.region(attributes)
            self._filter_depth = len(self._open)
            if "id" in attributes:
                self._filters[attributes["id"]] = self._filter
        elif self._filter is not None and local.startswith("fe"):
            self._filter.add(local, attributes)
        index = len(self._nodes)
        self._sizes.append(_font_size(attributes, self._sizes[-1] if self._sizes else FONT_SIZE))
        node.size = self._sizes[-1]
        self._nodes.append(node)
        if self._open:
            node.parent = self._open[-1]
            self._nodes[self._open[-1]].children.append(index)
        if "id" in attributes:
            self._ids.setdefault(attributes["id"], index)
        self._open.append(index)

    def end(self) -> None:
        self._open.pop()
        self._sizes.pop()
        if len(self._open) == self._filter_depth:  # the <filter> ends
            self._filter = None

    def _own(self, local: str, attributes: Mapping[str, str], numbers: list[float] | None) -> Cost:
        seconds = ELEMENT if local in SHAPES else 0.0
        if local == "use":
            seconds += USE
        share = math.pi / 4 if local in CURVED else 1.0
        filled = svgarea.box(self._canvas, local, attributes, share) if local in BOXED else 0.0
        if local == "path":  # a command, and a point for each pair of numbers
            data = attributes.get("d", "")
            seconds += POINT * (len(PATH_COMMAND.findall(data)) + len(NUMBER.findall(data)) / 2)
            filled = svgpath.filled(self._canvas, attributes)
        elif numbers is not None:  # a polygon's or a polyline's
            seconds += POINT * len(numbers) / 2
        layered = any(n in attributes for n in ("mask", "clip-path"))
        layer = LAYER_AREA if layered else 0.0
        if svgarea.length(attributes.get("opacity", "1"), 1.0) < 1:
            layer = LAYER_AREA
        if local == "polygon" and numbers is not None:
            filled = svgarea.polygon(self._canvas, numbers)
        seconds += LAYER if layer else 0.0
        fill = (FILL * filled, FILL if local in FILLED else 0.0)
        return Cost(seconds, layer, layer, self._rows(local, attributes), *fill)

    def _rows(self, local: str, attributes: Mapping[str, str]) -> float:
        """``per_side`` for the rows a rect, circle or ellipse spans (``ROW``)."""
        if local not in BOXED:
            return 0.0
        return ROW * svgarea.rows(self._canvas, local, attributes) * 1e3

    def text(self, data: str) -> None:
        """Characters inside the open element: glyphs when it is text."""
        if self._open and data.strip():
            node = self._nodes[self._open[-1]]
            glyphs = len(data.strip())
            glyph = GLYPH[0] + GLYPH[1] * min(self._sizes[-1], 1e4)
            node.own = node.own + Cost(TEXT_RUN + glyph * glyphs)
            node.glyphs += glyphs

    def cost(self, scale: float = 1.0) -> Cost:
        """The whole drawing's cost, drawn at ``scale`` times its document's size: the
        root's, each element counted as often as it is drawn (``<use>`` instances
        included), elements that only define drawn where used (``svgwalk``)."""
        if not self._nodes:
            return Cost()
        if self._css and not self._costs:
            self._restyle()
        if scale not in self._costs:
            walk = svgwalk.Walk(self._nodes, self._ids, self._filters, self._canvas, scale)
            self._costs[scale] = walk.total()
        return self._costs[scale]

    def plain(self) -> bool:
        """Whether it paints only flat colours (shapes, strokes, text: ``UNPLAIN``), so
        that its result is flat areas with edges, which a PNG saves at a flat rate
        (``saverates.DRAWN_FLAT``), however many edges: each is priced in the drawing."""
        return not any(node.local in UNPLAIN for node in self._nodes)

    def seconds(self, width: int, height: int) -> float:
        """What drawing it at ``width`` x ``height`` pixels costs besides the canvas."""
        scale = svgnest.scale(width * height, self._pixels)
        if not any(found.radii for found in self._filters.values()):
            scale = 1.0  # only a window in pixels changes with it: one walk
        return self.cost(scale).seconds(width, height)

    def _restyle(self) -> None:
        """What the ``<style>`` rules declare for each element (inherited in the walk)."""
        for node in self._nodes:
            names = {k: node.attributes[k] for k in ("class", "id") if k in node.attributes}
            declared = self._css.declared(node.local, names)
            if declared:
                node.css = declared
            match = URL_ID.search(declared.get("filter", ""))
            if node.filter is None and match is not None:
                node.filter = match.group(1)


def _canvas(attributes: Mapping[str, str]) -> tuple[float, float]:
    box = NUMBER.findall(attributes.get("viewBox", ""))
    if len(box) == 4:
        return float(box[2]), float(box[3])
    return svgarea.length(attributes.get("width"), 0.0), svgarea.length(
        attributes.get("height"), 0.0
    )


def _area(transform: str) -> float:
    """What a ``transform`` list multiplies areas by: the product of its ``scale`` and
    ``matrix`` determinants (translations and rotations keep areas; a skew is taken as
    1)."""
    area = 1.0
    for kind, args in _TRANSFORM.findall(transform):
        values = [float(n) for n in NUMBER.findall(args)]
        if kind == "scale" and values:
            area *= abs(values[0] * (values[1] if len(values) > 1 else values[0]))
        elif kind == "matrix" and len(values) == 6:
            area *= abs(values[0] * values[3] - values[1] * values[2])
    return min(area, 1e12)


def _font_size(attributes: Mapping[str, str], inherited: float) -> float:
    styled = _FONT_SIZE.search(attributes.get("style", ""))
    given = styled.group(1) if styled else attributes.get("font-size")
    return abs(svgarea.length(given, inherited))
