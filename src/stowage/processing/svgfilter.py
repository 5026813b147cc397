"""Filters as librsvg draws them, for the cost estimate (``svgdraw``, whose docstring
gives the measurements): each primitive's rate a megapixel of the filter's region.

An ``feMorphology``'s window is its radius in pixels, at the scale the SVG is drawn:
drawn at a fifth of its document's size, three 2000x2000 rects dilated by radius 10
took 0.17 s and were estimated at 1.6 s (at the document's size: 4.2 s, estimated
9.6). Its window is priced at the scale drawn (``Filter.rate``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from stowage.processing import svgarea
from stowage.processing.svgprice import Cost
from stowage.processing.svgrefs import NUMBER

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
    "feimage": 0.01,  # what it draws is priced besides (``Filter.images``)
    "femerge": 0.05,
    "femergenode": 0.1,  # each input merged is a pass
}
#: feBlend, feComposite and any other: a pass over each pixel of the region. Measured
#: (2026-12-06, one thread, 10 filtered 1000x1000 rects; a machine whose per-pixel passes
#: ran at 0.65 times the rates' beside its blur: feColorMatrix 0.08, priced 0.13):
#: feBlend 0.10-0.11 s a megapixel in any mode, feComposite 0.10-0.12 (arithmetic the
#: most), feMerge 0.035 and 0.065 a node (1 node 0.10, 8 nodes 0.54), feImage of an
#: element, feFlood, feOffset, feTile 0.001. At 0.05 for each (a merge's nodes free),
#: four rects filtered by merges and composites were estimated 0.09 s for 0.40.
OTHER_PRIMITIVE = 0.16
TURBULENCE = (0.11, 0.037)  # and a megapixel for each octave
TURBULENCE_OCTAVES = 24  # more octaves add nothing a pixel can show; librsvg stops too
MORPHOLOGY_CELL = 0.007  # a megapixel for each cell of the window
MORPHOLOGY_RADIUS = 10  # the window's half side stops growing past it (measured)
CONVOLVE = (0.15, 0.02)  # and a megapixel for each cell of the kernel
CONVOLVE_ORDER = 64
FILTER_LAYER = 0.01  # a megapixel of canvas, for each filtered element drawn


@dataclass
class Filter:
    """A filter's region, as a multiple of the filtered element's box (where it lies
    does not change what is drawn), and its primitives' cost."""

    width: float = 1.2
    height: float = 1.2
    per_megapixel: float = 0.0  # its primitives' but feMorphology's, a megapixel of region
    images: list[str] = field(default_factory=list)  # elements its feImage draws
    radii: list[tuple[float, float]] = field(default_factory=list)  # its feMorphology's

    def add(self, local: str, attributes: Mapping[str, str]) -> None:
        """One of its primitives."""
        if local == "femorphology":
            radii = [abs(float(n)) for n in NUMBER.findall(attributes.get("radius", "0"))]
            self.radii.append((radii[0], radii[-1]) if radii else (0.0, 0.0))
        else:
            self.per_megapixel += _primitive(local, attributes)
        if local == "feimage" and attributes.get("href", "").startswith("#"):
            self.images.append(attributes["href"][1:])  # drawn per element filtered

    def rate(self, scale: float) -> float:
        """Seconds a megapixel of region, drawn at ``scale`` times the document's size
        (an feMorphology's window is its radius in pixels)."""
        cells = sum(
            (2 * _capped(rx * scale, MORPHOLOGY_RADIUS) + 1)
            * (2 * _capped(ry * scale, MORPHOLOGY_RADIUS) + 1)
            for rx, ry in self.radii
        )
        return self.per_megapixel + MORPHOLOGY_CELL * cells

    def cost(self, box: float, scale: float) -> Cost:
        """Over an element whose box is ``box`` of the canvas (1: the canvas or unknown):
        its primitives over its region, and the canvas-sized layer librsvg makes."""
        region = min(1.0, box * max(0.0, self.width) * max(0.0, self.height))
        if box >= 1.0:
            region = 1.0
        rate = self.rate(scale)
        return Cost(0.0, FILTER_LAYER + rate * region, FILTER_LAYER + rate)


def region(attributes: Mapping[str, str]) -> Filter:
    """The region as a multiple of the element's box (objectBoundingBox units, the
    default); in user units, the canvas (``x``... taken as at least the box)."""
    if attributes.get("filterUnits", "").strip() == "userSpaceOnUse":
        return Filter(width=1e9, height=1e9)
    width = _fraction(attributes.get("width"), 1.2)
    height = _fraction(attributes.get("height"), 1.2)
    return Filter(width=width, height=height)


def _primitive(local: str, attributes: Mapping[str, str]) -> float:
    """Seconds a megapixel of region of one filter primitive."""
    if local == "feturbulence":
        octaves = min(
            TURBULENCE_OCTAVES, max(1.0, svgarea.length(attributes.get("numOctaves"), 1.0))
        )
        return TURBULENCE[0] + TURBULENCE[1] * octaves
    if local == "feconvolvematrix":
        orders = [float(n) for n in NUMBER.findall(attributes.get("order", "3"))] or [3.0]
        cells = _capped(orders[0], CONVOLVE_ORDER) * _capped(orders[-1], CONVOLVE_ORDER)
        return CONVOLVE[0] + CONVOLVE[1] * cells
    if local in ("fefuncr", "fefuncg", "fefuncb", "fefunca"):
        return 0.0
    if local in ("fedistantlight", "fepointlight", "fespotlight"):
        return 0.0
    return PRIMITIVES.get(local, OTHER_PRIMITIVE)


def _capped(value: float, most: float) -> float:
    return min(most, max(0.0, value))


def _fraction(text: str | None, default: float) -> float:
    if text is None:
        return default
    text = text.strip()
    if text.endswith("%"):
        return svgarea.length(text[:-1], default * 100) / 100
    return svgarea.length(text, default)
