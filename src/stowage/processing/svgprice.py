"""What librsvg's drawing of an SVG costs besides its canvas (``Cost``), as ``svgdraw``
prices it: fixed seconds, seconds that grow with the canvas' area (filters, fills) and
with its side (the stroked edges cairo scans, text's outlines), so that an SVG drawn
smaller than its document (a first ``resize`` draws the vector at that size) is priced
at the size drawn."""

from __future__ import annotations

import math
from typing import NamedTuple

#: How far a transform's scale may stretch what grows with the side: a stroke scaled up
#: past the canvas is clipped to it (as areas are held to ``Cost.ceiling``).
MOST_STRETCH = 64.0
CROWDED = (3e6, 6e6, 4.5)  # ``crowded``: from, to, and how much


class Cost(NamedTuple):
    """Seconds librsvg takes besides its canvas: ``fixed``, and ``per_megapixel`` of
    the canvas as it is drawn for layers and filters, on surfaces of their own;
    ``ceiling``: the most ``per_megapixel`` may be, were every area the whole canvas
    (what a transform's scale is held to: librsvg clips to it); ``per_side``: seconds a
    thousand pixels of the drawn canvas' side (the square root of its area), for
    lengths drawn at the canvas' scale; ``fill`` and ``fill_ceiling``: as
    ``per_megapixel`` and ``ceiling``, for shapes painted on the canvas itself, which
    cost no more a megapixel on a large canvas (``crowded``)."""

    fixed: float = 0.0
    per_megapixel: float = 0.0
    ceiling: float = 0.0
    per_side: float = 0.0
    fill: float = 0.0
    fill_ceiling: float = 0.0

    def __add__(self, other: object) -> Cost:  # type: ignore[override,unused-ignore]
        assert isinstance(other, Cost)
        return Cost(*(mine + theirs for mine, theirs in zip(self, other, strict=True)))

    def scaled(self, area: float) -> Cost:
        """Drawn with a transform that multiplies areas by ``area``."""
        stretch = min(math.sqrt(area), MOST_STRETCH)
        per_megapixel = min(self.per_megapixel * area, self.ceiling)
        fill = min(self.fill * area, self.fill_ceiling)
        per_side = self.per_side * stretch
        return Cost(self.fixed, per_megapixel, self.ceiling, per_side, fill, self.fill_ceiling)

    def times(self, count: float) -> Cost:
        """Drawn ``count`` times."""
        return Cost(*(value * count for value in self))

    def seconds(self, width: int, height: int) -> float:
        """At ``width`` x ``height``: a layer's or a filter's megapixel costs more on a
        large canvas (``crowded``), a fill's does not."""
        pixels = width * height
        side = math.sqrt(pixels)
        per_megapixel = self.per_megapixel * crowded(pixels) + self.fill
        return self.fixed + per_megapixel * pixels / 1e6 + self.per_side * side / 1e3


def crowded(pixels: float) -> float:
    """How much more a megapixel of filter or layer costs on a canvas of ``pixels``:
    its surfaces outgrow the caches. Measured (one thread, 2026-12-06): feGaussianBlur
    0.13-0.14 s a megapixel up to 2000x2000, 0.57 at 2500x2500, 0.66 at 3000x3000, 0.84
    at 4000x4000, 0.29 at 1000x4000, 0.55-0.65 at 1000x8000 and 8000x1000
    (feColorMatrix 0.065 and 0.25-0.27 the same way); a layer 0.22-0.25 ms a megapixel
    up to 2000x2000, 0.8-1.3 past 2500x2500. So 1 up to ``CROWDED[0]`` pixels, rising
    to ``CROWDED[2]`` at ``CROWDED[1]``. Not so fills (2026-12-06, 1,000 polygons of 4
    points): 0.30 s a megapixel opaque and 0.54 translucent on 1000x1000, 0.18 and 0.37
    on 2000x2000, 0.13 and 0.28 on 3000x3000; crowded, they were priced 15 times over."""
    low, high, most = CROWDED
    return 1.0 + (most - 1.0) * min(1.0, max(0.0, (pixels - low) / (high - low)))
