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
        """At ``width`` x ``height``: a large canvas costs more a megapixel
        (``crowded``)."""
        pixels = width * height
        side = math.sqrt(pixels)
        per_megapixel = self.per_megapixel * crowded(pixels)
        return self.fixed + per_megapixel * pixels / 1e6 + self.per_side * side / 1e3


def crowded(pixels: float) -> float:
    """How much more a megapixel of filter or layer costs on a canvas of ``pixels``:
    its surfaces outgrow the caches. Measured (one thread, 2026-12-06): feGaussianBlur
    0.13-0.14 s a megapixel up to 2000x2000, 0.57 at 2500x2500, 0.66 at 3000x3000, 0.84
    at 4000x4000, 0.29 at 1000x4000, 0.55-0.65 at 1000x8000 and 8000x1000
    (feColorMatrix 0.065 and 0.25-0.27 the same way); a layer 0.22-0.25 ms a megapixel
    up to 2000x2000, 0.8-1.3 past 2500x2500. So 1 up to ``CROWDED[0]`` pixels, rising
    to ``CROWDED[2]`` at ``CROWDED[1]``."""
    low, high, most = CROWDED
    return 1.0 + (most - 1.0) * min(1.0, max(0.0, (pixels - low) / (high - low)))
