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


class Cost(NamedTuple):
    """Seconds librsvg takes besides its canvas: ``fixed``, and ``per_megapixel`` of
    the canvas as it is drawn; ``ceiling``: the most ``per_megapixel`` may be, were every
    area the whole canvas (what a transform's scale is held to: librsvg clips to it);
    ``per_side``: seconds a thousand pixels of the drawn canvas' side (the square root
    of its area), for lengths drawn at the canvas' scale."""

    fixed: float = 0.0
    per_megapixel: float = 0.0
    ceiling: float = 0.0
    per_side: float = 0.0

    def __add__(self, other: object) -> Cost:  # type: ignore[override,unused-ignore]
        assert isinstance(other, Cost)
        return Cost(self[0] + other[0], self[1] + other[1], self[2] + other[2], self[3] + other[3])

    def scaled(self, area: float) -> Cost:
        """Drawn with a transform that multiplies areas by ``area``."""
        stretch = min(math.sqrt(area), MOST_STRETCH)
        per_megapixel = min(self.per_megapixel * area, self.ceiling)
        return Cost(self.fixed, per_megapixel, self.ceiling, self.per_side * stretch)

    def times(self, count: float) -> Cost:
        """Drawn ``count`` times."""
        return Cost(*(value * count for value in self))

    def seconds(self, width: int, height: int) -> float:
        """At ``width`` x ``height``: a long canvas's filters cost more a megapixel
        (measured: feTurbulence and feGaussianBlur over 1000x4000 or 4000x1000 0.6 s a
        megapixel, over 1000x8000 1.2, against 0.3 over 1000x1000 or 2000x2000), as if
        over at least half the square of its longer side."""
        pixels = max(width * height, max(width, height) ** 2 / 2)
        side = math.sqrt(width * height)
        return self.fixed + self.per_megapixel * pixels / 1e6 + self.per_side * side / 1e3
