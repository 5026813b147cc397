"""PNG's zlib level with ``compress``, by the result's size, and what it costs.

Level 9 searches longest: up to 1.25 s a megapixel on smooth content (a blurred photo,
an upscale), where level 8 takes half that for a file 0.1-0.4 % larger, and level 6
(every PNG without ``compress``) 0.07-0.13 s for one about 5 % larger (measured
2026-12-02, one thread, 1500-2000 px sides). Priced at level 9 a PNG past about 6.6 MP
with ``compress`` was refused as too costly: a saved URL of a large PNG answered 422. By
the result's megapixels, so that one URL of one source always gives the same bytes.
"""

from __future__ import annotations

import math

#: (at most these megapixels, the zlib level, seconds a megapixel at the slow end)
LEVELS = ((4.0, 9, 1.2), (12.0, 8, 0.65), (math.inf, 6, 0.13))


def _tier(pixels: float) -> tuple[float, int, float]:
    return next(tier for tier in LEVELS if pixels / 1e6 <= tier[0])


def level(pixels: float) -> int:
    """The zlib level of a PNG of ``pixels`` saved with ``compress``."""
    return _tier(pixels)[1]


def rate(pixels: float) -> float:
    """Seconds a megapixel that save may take."""
    return _tier(pixels)[2]
