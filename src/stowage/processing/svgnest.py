"""The scales an SVG is drawn at, for the cost estimate (``svgdraw``): a nested
``<svg>``'s viewport, and the whole document's when it is drawn at another size.

A nested ``<svg width="500" viewBox="0 0 10 10">`` draws what it holds 50 times as
wide: its shapes' boxes, their fills and filter regions, are 2,500 times the area their
own units give. Priced by their units, 20-80 blurred circles in such a viewport (1 to 3
deep) were estimated at 0.07-0.12 s and took 0.4-0.72 s; the viewport is now priced as
a transform that scales areas (held, as transforms are, to the canvas).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from stowage.processing import svgarea
from stowage.processing.svgrefs import NUMBER

#: The scales a drawing is priced at: powers of two, so a job's two estimates (and
#: the same size drawn again) walk the drawing once.
LEAST_SCALE, MOST_SCALE = 2.0**-8, 2.0**8


def area(attributes: Mapping[str, str], viewport: tuple[float, float]) -> float:
    """What a nested ``<svg>`` multiplies areas by: its size over its ``viewBox``'s (as
    ``preserveAspectRatio`` fits one to the other); 1 without a ``viewBox``.
    ``viewport``: the size a percentage is of."""
    box = [float(n) for n in NUMBER.findall(attributes.get("viewBox", ""))]
    if len(box) != 4 or box[2] <= 0 or box[3] <= 0:
        return 1.0
    width = _size(attributes.get("width"), viewport[0])
    height = _size(attributes.get("height"), viewport[1])
    across, down = width / box[2], height / box[3]
    fit = attributes.get("preserveAspectRatio", "").strip()
    if fit.startswith("none"):
        return across * down
    side = max(across, down) if "slice" in fit else min(across, down)
    return side * side


def pixels(attributes: Mapping[str, str], canvas: tuple[float, float]) -> float:
    """The root ``<svg>``'s size in pixels, as libvips draws it (``canvas``: its
    ``viewBox``'s size, or its own)."""
    return _size(attributes.get("width"), canvas[0]) * _size(attributes.get("height"), canvas[1])


def scale(drawn: float, document: float) -> float:
    """The scale ``drawn`` pixels are of a document of ``document`` pixels (as a side),
    rounded up to a power of two."""
    if document <= 0 or drawn <= 0:
        return 1.0
    exact = math.sqrt(drawn / document)
    rounded = 2.0 ** math.ceil(math.log2(max(exact, LEAST_SCALE)))
    return min(rounded, MOST_SCALE)


def _size(text: str | None, whole: float) -> float:
    """A width or height (a percentage: of ``whole``)."""
    if text is None:
        return whole
    text = text.strip()
    if text.endswith("%"):
        return whole * svgarea.length(text[:-1], 100.0) / 100
    return max(0.0, svgarea.length(text, whole))
