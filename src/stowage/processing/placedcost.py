"""The decode of the other files a chain places (a watermark's, a collage's cells, an
animation's frames) when Pillow decodes them (JPEG 2000, BMP, ICO: ``pillowformats``),
priced from their headers before any of them is decoded.

Their sizes were held to the pixel limits, but their decode was not priced: a JPEG 2000
decodes at about 0.2 s a megapixel (``cost.JPEG2000``), thirteen times libvips' PNG
decode the estimate counts for a placed image, and a watermark's decode was not counted
at all: a 2 MP JPEG 2000 watermark on a 320x240 picture was estimated 0.01 s for 0.75 s
of CPU, a collage cell of it 0.06 s (now 0.4-0.5 s); at that rate a 30 MP one, within
the pixel limits, held a small slot about 6 s.
"""

from __future__ import annotations

from stowage.processing import composite, cost, pillowformats
from stowage.processing.base import Limits


def seconds(limits: Limits) -> float:
    """Seconds of one core Pillow's decodes of the job's other sources take (each
    listing decoded once), read from their headers (``pillowformats.size_of``, which
    refuses a header past the pixel limits)."""
    total = 0.0
    for path in composite.source_paths():
        kind = pillowformats.kind_of(path) if path.is_file() else None  # the task says
        if kind is None:
            continue
        width, height = pillowformats.size_of(path, kind, limits)
        pixels = width * height
        if kind == "image/jp2":
            decode = cost.JPEG2000 * pixels / 1e6
        else:
            decode = pillowformats.decode_seconds(path, kind, pixels)
        total += decode + cost.DECODE * pixels / 1e6  # and libvips' read of what it made
    return total
