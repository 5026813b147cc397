"""A shape's outline as cairo draws it, for the cost estimate (``svgdraw``): the area a
path fills (each subpath's polygon through its points and a curve's control points,
held to its box within the canvas, as ``svgarea.polygon`` prices a polygon's), and the
length, box and vertices its stroke is drawn along (``svgstroke``)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import NamedTuple

from stowage.processing import svgarea, svgdash

_TOKEN = re.compile(r"([MLHVCSQTAZmlhvcsqtaz])|([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)")
_ARITY = {"m": 2, "l": 2, "t": 2, "h": 1, "v": 1, "c": 6, "s": 4, "q": 4, "a": 7, "z": 0}
Point = tuple[float, float]


class Outline(NamedTuple):
    """``length``: stroked (user units); ``vertices``: where segments meet; ``box``:
    the width and height its points span; ``area``: what its fill covers, at most."""

    length: float
    vertices: float
    box: Point
    area: float


def outline(local: str, attributes: Mapping[str, str]) -> Outline:
    """The outline of a shape (an empty one for anything else)."""
    get = attributes.get
    if local in ("polygon", "polyline"):
        return of_points(svgarea.numbers_in(get("points", "")), closed=local == "polygon")
    if local == "path":
        parts = subpaths(get("d", ""))
    elif local == "line":
        numbers = [svgarea.length(get(n), 0.0) for n in ("x1", "y1", "x2", "y2")]
        parts = [list(zip(numbers[::2], numbers[1::2], strict=False))]
    else:  # rect, circle, ellipse: their box
        r = abs(svgarea.length(get("r"), 0.0))
        box = (
            abs(svgarea.length(get("width"), 0.0)) or 2 * abs(svgarea.length(get("rx"), r)),
            abs(svgarea.length(get("height"), 0.0)) or 2 * abs(svgarea.length(get("ry"), r)),
        )
        return Outline(svgdash.length(local, attributes), 4.0, box, box[0] * box[1])
    points = [p for part in parts for p in part]
    if not points:
        return Outline(0.0, 0.0, (0.0, 0.0), 0.0)
    xs, ys = [x for x, _ in points], [y for _, y in points]
    box = (max(xs) - min(xs), max(ys) - min(ys))
    area = sum(abs(_shoelace(part)) for part in parts) if local != "line" else 0.0
    length = svgdash.length(local, attributes)
    return Outline(length, float(len(points)), box, min(area, box[0] * box[1]))


def of_points(numbers: list[float], *, closed: bool) -> Outline:
    """A polygon's or a polyline's outline from its numbers (``svgarea.numbers_in``), by
    ``map`` (a fifth of a generator's time: 20,000 polygons are read in a refused
    document's estimate)."""
    xs, ys = numbers[0::2], numbers[1::2]
    xs = xs[: len(ys)]
    if not ys:
        return Outline(0.0, 0.0, (0.0, 0.0), 0.0)
    points = list(zip(xs, ys, strict=True))
    ends = points[1:] + points[:1] if closed else points[1:]
    length = sum(map(math.dist, points, ends))
    box = (max(xs) - min(xs), max(ys) - min(ys))
    area = svgarea.shoelace(xs, ys)
    return Outline(length, float(len(points)), box, min(area, box[0] * box[1]))


def filled(canvas: tuple[float, float], attributes: Mapping[str, str]) -> float:
    """A path's filled area as a fraction of the canvas, at most its box within it."""
    width, height = canvas
    parts = subpaths(attributes.get("d", ""))
    points = [p for part in parts for p in part]
    if width <= 0 or height <= 0 or len(points) < 3:
        return 0.0
    xs, ys = [x for x, _ in points], [y for _, y in points]
    across = max(0.0, min(max(xs), width) - max(min(xs), 0.0))
    down = max(0.0, min(max(ys), height) - max(min(ys), 0.0))
    area = sum(abs(_shoelace(part)) for part in parts)
    return min(area, across * down) / (width * height)


def subpaths(data: str) -> list[list[Point]]:
    """Each subpath's points: ends, a curve's control points, an arc's end and the
    corners of its ellipse's box (it may bulge that far)."""
    parts: list[list[Point]] = []
    at, start, command = (0.0, 0.0), (0.0, 0.0), ""
    args: list[float] = []
    for letter, number in _TOKEN.findall(data):
        if letter:
            command, args = letter, []
            if letter in "zZ":
                at = start
            continue
        args.append(float(number))
        kind = command.lower()
        arity = _ARITY.get(kind, 0)
        if arity == 0 or len(args) < arity:
            continue
        relative = command.islower()
        if kind == "h":
            points = [(args[0] + at[0] if relative else args[0], at[1])]
        elif kind == "v":
            points = [(at[0], args[0] + at[1] if relative else args[0])]
        else:
            pairs = (
                [(args[-2], args[-1])]
                if kind == "a"
                else list(zip(args[::2], args[1::2], strict=False))
            )
            points = [(x + at[0], y + at[1]) if relative else (x, y) for x, y in pairs]
        if kind == "a":
            end, rx, ry = points[-1], abs(args[0]), abs(args[1])
            middle = ((at[0] + end[0]) / 2, (at[1] + end[1]) / 2)
            corners = ((-rx, -ry), (rx, -ry), (rx, ry), (-rx, ry))
            points = [(middle[0] + dx, middle[1] + dy) for dx, dy in corners]
            points.append(end)
        if kind == "m" or not parts:
            start = points[-1] if kind == "m" else at
            parts.append([start] if kind == "m" else [at])
            if kind == "m":
                command = "l" if relative else "L"  # pairs after a moveto are lines
                points = points[:-1]
        parts[-1].extend(points)
        at, args = points[-1] if points else at, []
        if kind == "m":
            at = start
    return parts


def _shoelace(points: list[Point]) -> float:
    if len(points) < 3:
        return 0.0
    shifted = points[1:] + points[:1]
    return sum(x0 * y1 - x1 * y0 for (x0, y0), (x1, y1) in zip(points, shifted, strict=True)) / 2
