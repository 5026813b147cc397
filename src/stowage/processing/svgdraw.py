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

The result is ``Cost``: seconds besides the canvas, and seconds a megapixel of it (a
filter region's fraction of the canvas times its rate). The rates were measured with
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
  polygon's fill is priced as a shape's box is (``FILL``), over its area: 2,000
  translucent triangles across 2000x2000 took 3.5 s, estimated 0.73 by their points;
- text: 1,000 lines of 14 glyphs at 12 px 0.17 s (12 us a glyph), at 10-400 px 0.84 s
  (60 us a glyph at 205 px on average): 12 us, and 0.25 us for each unit of the font
  size; 2,438 lines at 10-400 px drawn at a fifth of their size took 1.8 s, about the
  same a glyph: the glyphs are laid out at the document's size;
- ``<use>`` of a translucent 50x50 rect, 10^3 instances 0.30 s, 10^4 2.9 s (0.29 ms an
  instance; 0.47 ms when each is 500x500); 1,000 translucent circles of radius 100-500
  0.62 s;
- a pattern of 2x2 tiles over 2000x2000: 0.04 s (the tile is drawn once): priced as a
  fill.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from stowage.processing import svgarea, svgcss, svgdash, svgrefs
from stowage.processing.svgrefs import NUMBER, PATH_COMMAND, URL_ID

#: Seconds a megapixel of filter region, per primitive (local names, lower case);
#: primitives not named cost ``OTHER_PRIMITIVE``.
PRIMITIVES = {
    "fegaussianblur": 0.22,
    "fedropshadow": 0.2,
    "fedisplacementmap": 0.75,
    "fespecularlighting": 0.2,
    "fediffuselighting": 0.15,
    "fecolormatrix": 0.13,
    "fecomponenttransfer": 0.12,
    "feflood": 0.01,
    "feoffset": 0.01,
    "fetile": 0.01,
}
OTHER_PRIMITIVE = 0.05  # feBlend, feComposite, feMerge, feImage: a pass over the region
TURBULENCE = (0.11, 0.037)  # and a megapixel for each octave
TURBULENCE_OCTAVES = 24  # more octaves add nothing a pixel can show; librsvg stops too
MORPHOLOGY_CELL = 0.007  # a megapixel for each cell of the window
MORPHOLOGY_RADIUS = 10  # the window's half side stops growing past it (measured)
CONVOLVE = (0.15, 0.02)  # and a megapixel for each cell of the kernel
CONVOLVE_ORDER = 64
FILTER_LAYER = 0.01  # a megapixel of canvas, for each filtered element drawn
ELEMENT = 16e-6  # seconds, each drawn element
POINT = 20e-6  # each point of a path, polygon or polyline
GLYPH = (12e-6, 0.25e-6)  # each character of text, and for each unit of its font size
FONT_SIZE = 16.0  # when no element says
USE = 0.29e-3  # each <use> instance
LAYER = 0.2e-3  # each translucent, masked or clipped element
FILL = 0.002  # a megapixel of a shape's box filled (1,000 translucent circles, above)
#: A megapixel of a shape's box filled with a gradient, for each of its stops past
#: ``FREE_STOPS`` (a radial one: 0.05 s at 200 stops, 0.96 at 2,000, 9.0 at 20,000 a
#: megapixel; a linear one at most 0.2: priced as radial; a gradient's ``href`` gives
#: its stops to another).
STOP, FREE_STOPS = 0.5e-3, 64
GRADIENTS = frozenset({"lineargradient", "radialgradient"})
#: Elements whose content is drawn only where something refers to them.
UNDRAWN = frozenset(
    {"defs", "symbol", "pattern", "clippath", "mask", "marker", "filter", "style"}
    | {"lineargradient", "radialgradient", "title", "desc", "metadata"}
)
SHAPES = frozenset({"rect", "circle", "ellipse", "line", "path", "polygon", "polyline"})
SHAPES |= {"image", "text", "tspan", "textpath"}
BOXED = frozenset({"rect", "circle", "ellipse"})  # filled over their box (``FILL``)
_TRANSFORM = re.compile(r"(scale|matrix)\s*\(([^)]*)\)")
_FONT_SIZE = re.compile(r"font-size\s*:\s*([^;]+)")
_STYLED_FILTER = re.compile(r"filter\s*:\s*url\(\s*['\"]?#([^'\")\s]+)", re.I)


class Cost(NamedTuple):
    """Seconds librsvg takes besides its canvas: ``fixed``, and ``per_megapixel`` of
    the canvas as it is drawn; ``ceiling``: the most ``per_megapixel`` may be, were every
    area the whole canvas (what a transform's scale is held to: librsvg clips to it)."""

    fixed: float = 0.0
    per_megapixel: float = 0.0
    ceiling: float = 0.0

    def __add__(self, other: object) -> Cost:  # type: ignore[override,unused-ignore]
        assert isinstance(other, Cost)
        return Cost(*(a + b for a, b in zip(self, other, strict=True)))

    def scaled(self, area: float) -> Cost:
        """Drawn with a transform that multiplies areas by ``area``."""
        return Cost(self.fixed, min(self.per_megapixel * area, self.ceiling), self.ceiling)

    def times(self, count: float) -> Cost:
        """Drawn ``count`` times."""
        return Cost(*(value * count for value in self))

    def seconds(self, width: int, height: int) -> float:
        """At ``width`` x ``height``: a long canvas's filters cost more a megapixel
        (measured: feTurbulence and feGaussianBlur over 1000x4000 or 4000x1000 0.6 s a
        megapixel, over 1000x8000 1.2, against 0.3 over 1000x1000 or 2000x2000), as if
        over at least half the square of its longer side."""
        pixels = max(width * height, max(width, height) ** 2 / 2)
        return self.fixed + self.per_megapixel * pixels / 1e6


@dataclass
class _Node:
    own: Cost
    children: list[int] = field(default_factory=list)
    target: str | None = None  # a <use>'s reference
    #: what it draws besides (a clip path, a mask, a pattern, a marker) and how often
    drawn: list[tuple[str, float]] = field(default_factory=list)
    filter: str | None = None
    region: float = 1.0  # the filtered region's fraction of the canvas
    area: float = 1.0  # what its transform multiplies areas by
    undrawn: bool = False
    local: str = ""  # and what ``<style>`` rules match it by, for ``_restyle``
    names: dict[str, str] = field(default_factory=dict)
    shape: Mapping[str, str] | None = None  # a shape's attributes: vertices, length
    stops: int = 0  # a gradient's


@dataclass
class _Filter:
    """A filter's region, as a multiple of the filtered element's box (where it lies
    does not change what is drawn), and its primitives' cost."""

    width: float = 1.2
    height: float = 1.2
    per_megapixel: float = 0.0  # its primitives', a megapixel of region
    images: list[str] = field(default_factory=list)  # elements its feImage draws


class Drawing:
    """The elements of one SVG, as the rewrite reads them (``start``, ``end``)."""

    def __init__(self) -> None:
        self._nodes: list[_Node] = []
        self._open: list[int] = []
        self._ids: dict[str, int] = {}
        self._filters: dict[str, _Filter] = {}
        self._filter: _Filter | None = None  # the <filter> being read
        self._filter_depth = -1  # and its depth
        self._sizes: list[float] = []  # the font size of each open element
        self._painted: list[Mapping[str, str]] = []  # and its ``svgrefs.painted`` properties
        self._canvas = (0.0, 0.0)  # in user units
        self._css = svgcss.Rules()

    def style(self, css: str) -> None:
        """The text of a ``<style>`` element: its rules' filters, clips, masks, patterns
        and markers are drawn as named in attributes (``svgcss``)."""
        self._css.add(css)

    def start(self, local: str, attributes: Mapping[str, str]) -> None:
        if not self._nodes:
            self._canvas = _canvas(attributes)
        node = _Node(self._own(local, attributes), undrawn=local in UNDRAWN, local=local)
        node.names = {k: attributes[k] for k in ("class", "id") if k in attributes}
        node.shape = attributes if local in svgrefs.SHAPES else None
        if local == "use" or local in GRADIENTS:
            href = attributes.get("href", "")
            node.target = href[1:] if href.startswith("#") else None
        gradient = self._nodes[self._open[-1]] if self._open else None
        if local == "stop" and gradient is not None and gradient.local in GRADIENTS:
            gradient.stops += 1
            if gradient.stops > FREE_STOPS:
                gradient.own = gradient.own + Cost(0.0, STOP, STOP)
        styled = _STYLED_FILTER.search(attributes.get("style", ""))
        match = styled or URL_ID.match(attributes.get("filter", "").strip())
        node.region = svgarea.box(self._canvas, local, attributes)
        if match:
            node.filter = match.group(1)
        if "transform" in attributes:
            node.area = _area(attributes["transform"])
        painted = svgrefs.painted(attributes, self._painted[-1] if self._painted else {})
        node.drawn = svgrefs.referred(local, attributes, painted, node.shape)
        node.own = node.own + self._dashed(node, painted)
        if local == "filter":
            self._filter = _filter_region(attributes)
            self._filter_depth = len(self._open)
            if "id" in attributes:
                self._filters[attributes["id"]] = self._filter
        elif self._filter is not None and local.startswith("fe"):
            self._filter.per_megapixel += _primitive(local, attributes)
            if local == "feimage" and attributes.get("href", "").startswith("#"):
                self._filter.images.append(attributes["href"][1:])  # drawn per element
        index = len(self._nodes)
        self._painted.append(painted)
        self._sizes.append(_font_size(attributes, self._sizes[-1] if self._sizes else FONT_SIZE))
        self._nodes.append(node)
        if self._open:
            self._nodes[self._open[-1]].children.append(index)
        if "id" in attributes:
            self._ids.setdefault(attributes["id"], index)
        self._open.append(index)

    def end(self) -> None:
        self._open.pop()
        self._sizes.pop()
        self._painted.pop()
        if len(self._open) == self._filter_depth:  # the <filter> ends
            self._filter = None

    def _own(self, local: str, attributes: Mapping[str, str]) -> Cost:
        seconds = ELEMENT if local in SHAPES else 0.0
        if local == "use":
            seconds += USE
        if local == "path":  # a command, and a point for each pair of numbers
            data = attributes.get("d", "")
            seconds += POINT * (len(PATH_COMMAND.findall(data)) + len(NUMBER.findall(data)) / 2)
        elif local in ("polygon", "polyline"):  # "x,y x,y" or "x y x y": numbers counted
            data = attributes.get("points", "")
            seconds += POINT * (len(data.split()) + data.count(",")) / 2
        layered = any(n in attributes for n in ("mask", "clip-path"))
        if layered or svgarea.length(attributes.get("opacity", "1"), 1.0) < 1:
            seconds += LAYER
        filled = svgarea.box(self._canvas, local, attributes) if local in BOXED else 0.0
        if local == "polygon":
            filled = svgarea.polygon(self._canvas, attributes.get("points", ""))
        return Cost(seconds, FILL * filled, FILL if local in BOXED or local == "polygon" else 0)

    def text(self, data: str) -> None:
        """Characters inside the open element: glyphs when it is text."""
        if self._open and data.strip():
            node = self._nodes[self._open[-1]]
            glyph = GLYPH[0] + GLYPH[1] * min(self._sizes[-1], 1e4)
            node.own = node.own + Cost(glyph * len(data.strip()))

    def cost(self) -> Cost:
        """The whole drawing's cost: the root's, each element counted as often as it is
        drawn (``<use>`` instances included), elements that only define drawn where
        used."""
        if not self._nodes:
            return Cost()
        if self._css:
            self._restyle()
        memo: dict[int, Cost] = {}
        visiting: set[int] = set()
        stack: list[tuple[int, bool]] = [(0, False)]
        while stack:
            index, done = stack.pop()
            if index in memo:
                continue
            node = self._nodes[index]
            refs = list(node.children)
            target = self._ids.get(node.target) if node.target is not None else None
            if target is not None:
                refs.append(target)
            found = self._filters.get(node.filter) if node.filter is not None else None
            named = node.drawn + [(i, 1.0) for i in (found.images if found else ())]
            drawn = [(self._ids[i], n) for i, n in named if i in self._ids]
            refs.extend(index for index, _ in drawn)
            if not done:
                if index in visiting:  # a reference cycle: librsvg draws nothing of it
                    memo[index] = Cost()
                    continue
                visiting.add(index)
                stack.append((index, True))
                stack.extend((r, False) for r in refs if r not in memo and r not in visiting)
                continue
            visiting.discard(index)
            total = node.own + self._filtered(node)
            for child in node.children:
                if not self._nodes[child].undrawn:
                    total = total + memo.get(child, Cost())
            if target is not None:  # a <use> draws its target, even one in <defs>
                total = total + memo.get(target, Cost())
            for referred, times in drawn:  # drawn again for each element referring to it
                again = memo.get(referred, Cost()).times(times)
                box = self._nodes[referred].local in GRADIENTS  # over the shape's box
                total = total + (again.scaled(node.region) if box else again)
            memo[index] = total.scaled(node.area) if node.area != 1.0 else total
        return memo[0]

    def _restyle(self) -> None:
        """Adds what the ``<style>`` rules draw to each element, inherited as in
        ``start`` (elements come in document order: a parent before its children)."""
        parents = {child: i for i, node in enumerate(self._nodes) for child in node.children}
        painted: list[Mapping[str, str]] = []
        for index, node in enumerate(self._nodes):
            declared = self._css.declared(node.local, node.names)
            inherited = painted[parents[index]] if index in parents else {}
            painted.append(svgrefs.painted(declared, inherited))
            node.drawn += svgrefs.referred(node.local, declared, painted[-1], node.shape)
            node.own = node.own + self._dashed(node, painted[-1])
            match = URL_ID.search(declared.get("filter", ""))
            if node.filter is None and match is not None:
                node.filter = match.group(1)

    @staticmethod
    def _dashed(node: _Node, painted: Mapping[str, str]) -> Cost:
        if "stroke-dasharray" not in painted or node.shape is None:
            return Cost()
        return Cost(svgdash.seconds(svgdash.length(node.local, node.shape), painted))

    def _filtered(self, node: _Node) -> Cost:
        found = self._filters.get(node.filter) if node.filter is not None else None
        if found is None:
            return Cost()
        region = min(1.0, node.region * max(0.0, found.width) * max(0.0, found.height))
        if node.region >= 1.0:
            region = 1.0
        ceiling = FILTER_LAYER + found.per_megapixel
        return Cost(0.0, FILTER_LAYER + found.per_megapixel * region, ceiling)


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


def _filter_region(attributes: Mapping[str, str]) -> _Filter:
    """The region as a multiple of the element's box (objectBoundingBox units, the
    default); in user units, the canvas (``x``... taken as at least the box)."""
    if attributes.get("filterUnits", "").strip() == "userSpaceOnUse":
        return _Filter(width=1e9, height=1e9)
    width = _fraction(attributes.get("width"), 1.2)
    height = _fraction(attributes.get("height"), 1.2)
    return _Filter(width=width, height=height)


def _primitive(local: str, attributes: Mapping[str, str]) -> float:
    """Seconds a megapixel of region of one filter primitive."""
    if local == "feturbulence":
        octaves = min(
            TURBULENCE_OCTAVES, max(1.0, svgarea.length(attributes.get("numOctaves"), 1.0))
        )
        return TURBULENCE[0] + TURBULENCE[1] * octaves
    if local == "femorphology":
        radii = [float(n) for n in NUMBER.findall(attributes.get("radius", "0"))] or [0.0]
        rx, ry = radii[0], radii[-1]
        cells = (2 * _capped(rx, MORPHOLOGY_RADIUS) + 1) * (2 * _capped(ry, MORPHOLOGY_RADIUS) + 1)
        return MORPHOLOGY_CELL * cells
    if local == "feconvolvematrix":
        orders = [float(n) for n in NUMBER.findall(attributes.get("order", "3"))] or [3.0]
        cells = _capped(orders[0], CONVOLVE_ORDER) * _capped(orders[-1], CONVOLVE_ORDER)
        return CONVOLVE[0] + CONVOLVE[1] * cells
    if local in ("fefuncr", "fefuncg", "fefuncb", "fefunca", "femergenode"):
        return 0.0
    if local in ("fedistantlight", "fepointlight", "fespotlight"):
        return 0.0
    return PRIMITIVES.get(local, OTHER_PRIMITIVE)


def _font_size(attributes: Mapping[str, str], inherited: float) -> float:
    styled = _FONT_SIZE.search(attributes.get("style", ""))
    given = styled.group(1) if styled else attributes.get("font-size")
    return abs(svgarea.length(given, inherited))


def _capped(value: float, most: float) -> float:
    return min(most, max(0.0, value))


def _fraction(text: str | None, default: float) -> float:
    if text is None:
        return default
    text = text.strip()
    if text.endswith("%"):
        return svgarea.length(text[:-1], default * 100) / 100
    return svgarea.length(text, default)
