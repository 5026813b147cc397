"""The area an SVG shape fills, as a fraction of the canvas (``svgdraw`` prices a fill
by it), and the lengths it is read from."""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Mapping

from stowage.processing.svgrefs import NUMBER

#: A list of plain numbers, split by ``str.split`` (a tenth of the regular expression's
#: time, for a drawing of many polygons); anything else is read by ``NUMBER``
_PLAIN = re.compile(r"[0-9.eE+\s,-]*")


def length(text: str | None, default: float) -> float:
    """A length in user units (a percentage or a unit other than px: ``default``)."""
    if text is None:
        return default
    text = text.strip()
    match = NUMBER.fullmatch(text.removesuffix("px").strip())
    return float(match.group(0)) if match else default


def box(
    canvas: tuple[float, float], local: str, attributes: Mapping[str, str], share: float = 1.0
) -> float:
    """The element's box as a fraction of the canvas (1: unknown, or the canvas), or
    ``share`` of it (a circle's area): at most as wide and as tall as the canvas, which
    librsvg clips to (a circle of radius 1,000 on 4000x1000 fills at most half of it)."""
    size = _size(canvas, local, attributes)
    if size is None:
        return 1.0
    (width, height), clipped = canvas, min(size[0], canvas[0]) * min(size[1], canvas[1])
    return min(share * size[0] * size[1], clipped) / (width * height)


def rows(canvas: tuple[float, float], local: str, attributes: Mapping[str, str]) -> float:
    """The rows a rect, circle or ellipse spans, as a fraction of the canvas' side (the
    square root of its area; 1: unknown, as ``box``'s whole canvas)."""
    size = _size(canvas, local, attributes)
    if size is None:
        return 1.0
    return min(size[1], canvas[1]) / math.sqrt(canvas[0] * canvas[1])


def _size(
    canvas: tuple[float, float], local: str, attributes: Mapping[str, str]
) -> tuple[float, float] | None:
    width, height = canvas
    if width <= 0 or height <= 0:
        return None
    if local == "rect":
        w, h = (
            length(attributes.get("width"), width),
            length(attributes.get("height"), height),
        )
    elif local == "circle":
        w = h = 2 * length(attributes.get("r"), width)
    elif local == "ellipse":
        w, h = (
            2 * length(attributes.get("rx"), width),
            2 * length(attributes.get("ry"), height),
        )
    else:
        return None
    return max(0.0, w), max(0.0, h)


def polygon(canvas: tuple[float, float], numbers: list[float]) -> float:
    """A polygon's area (the shoelace formula) as a fraction of the canvas, at most
    that of its box within the canvas (a self-crossing one's parts may cancel: its
    points are priced besides)."""
    width, height = canvas
    xs, ys = numbers[0::2], numbers[1::2][: len(numbers) // 2]
    if width <= 0 or height <= 0 or len(ys) < 3:
        return 0.0
    xs = xs[: len(ys)]
    across = max(0.0, min(max(xs), width) - max(min(xs), 0.0))
    down = max(0.0, min(max(ys), height) - max(min(ys), 0.0))
    return min(shoelace(xs, ys), across * down) / (width * height)


def shoelace(xs: list[float], ys: list[float]) -> float:
    """The area a closed ring of points encloses (its parts that cross may cancel): the
    shoelace's two sums, by ``map`` (a third of a generator's time on many points)."""
    turns: float = sum(map(operator.mul, xs, ys[1:] + ys[:1]))
    turns -= sum(map(operator.mul, xs[1:] + xs[:1], ys))
    return abs(turns) / 2


def numbers_in(text: str) -> list[float]:
    """The numbers of a list such as a polygon's points, as librsvg reads them."""
    if _PLAIN.fullmatch(text):
        try:
            numbers = [float(n) for n in text.replace(",", " ").split()]
        except ValueError:  # "1.2.3", "1-2": numbers run together
            pass
        else:
            if all(map(math.isfinite, numbers)):
                return numbers
    return [float(n) for n in NUMBER.findall(text)]
