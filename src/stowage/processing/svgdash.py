"""What a dashed stroke costs librsvg (cairo strokes each dash as a shape of its own),
for the cost estimate (``svgdraw``): the dashes are the stroked length over the dash
pattern's period, each priced by the stroke's width.

A probe's 10 paths of 500 segments dashed ``0.1 0.1`` were estimated at 0.32 s and ran
to the 30 s deadline (22.7 s of CPU at 300 px). Measured (librsvg through libvips 8.18,
one thread, a 200-segment path, 10^4 to 10^6 dashes): 1.1-2.0 us a dash of width 1
(0.5-0.8 drawn at a sixth of its size), 10-15 us at width 30: ``DASH``. The length is
an upper bound: a curve's control polygon, an arc's whole ellipse; transforms do not
change how many dashes there are (their lengths are in the element's units).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping

DASH = (2e-6, 0.4e-6)  # seconds a dash, and for each unit of the stroke's width
#: Inherited properties a dashed stroke reads (``svgrefs.painted`` keeps them).
DASHING = ("stroke-dasharray", "stroke-width")
#: And what a stroke reads (``svgstroke``): whether it is painted, and its width.
STROKING = ("stroke", *DASHING)
_TOKEN = re.compile(r"([MLHVCSQTAZmlhvcsqtaz])|([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_ARITY = {"m": 2, "l": 2, "t": 2, "h": 1, "v": 1, "c": 6, "s": 4, "q": 4, "a": 7, "z": 0}


def seconds(stroked: float, painted: Mapping[str, str]) -> float:
    """What dashing ``stroked`` units of length (``length``) costs, with the element's
    inherited ``DASHING`` properties (0 when its stroke is not dashed)."""
    values = [abs(float(n)) for n in _NUMBER.findall(painted.get("stroke-dasharray", ""))]
    period = sum(values) * (2 if len(values) % 2 else 1)
    if period <= 0:
        return 0.0
    return stroked / period * (DASH[0] + DASH[1] * min(width(painted), 1e4))


def width(painted: Mapping[str, str]) -> float:
    """The stroke's width (user units)."""
    return _first(painted.get("stroke-width", "1"), 1.0)


def length(local: str, attributes: Mapping[str, str]) -> float:
    """The stroked length of a shape, at least (user units)."""
    get = attributes.get
    if local == "path":
        return _path(get("d", ""))
    if local in ("polyline", "polygon"):
        numbers = [float(n) for n in _NUMBER.findall(get("points", ""))]
        points = list(zip(numbers[::2], numbers[1::2], strict=False))
        if local == "polygon" and points:
            points.append(points[0])
        return sum(math.dist(a, b) for a, b in itertools.pairwise(points))
    if local == "line":
        ends = [_first(get(n, "0"), 0.0) for n in ("x1", "y1", "x2", "y2")]
        return math.dist(ends[:2], ends[2:])
    if local == "rect":
        return 2 * (abs(_first(get("width", "0"), 0.0)) + abs(_first(get("height", "0"), 0.0)))
    radii = [abs(_first(get(n, "0"), 0.0)) for n in ("r", "rx", "ry")]
    return 2 * math.pi * max(radii) if local in ("circle", "ellipse") else 0.0


def _path(data: str) -> float:
    """A path's length: each segment's control polygon (at least its curve), an arc's
    whole ellipse."""
    total, at, start, command = 0.0, (0.0, 0.0), (0.0, 0.0), ""
    args: list[float] = []
    for letter, number in _TOKEN.findall(data):
        if letter:
            command, args = letter, []
            if letter in "zZ":
                total, at = total + math.dist(at, start), start
            continue
        args.append(float(number))
        arity = _ARITY.get(command.lower(), 0)
        if arity == 0 or len(args) < arity:
            continue
        relative, kind = command.islower(), command.lower()
        if kind == "h":
            points = [(args[0] + at[0] if relative else args[0], at[1])]
        elif kind == "v":
            points = [(at[0], args[0] + at[1] if relative else args[0])]
        else:
            pairs = [(args[-2], args[-1])] if kind == "a" else _pairs(args)
            points = [(x + at[0], y + at[1]) if relative else (x, y) for x, y in pairs]
        ends = [at, *points]
        segment = sum(math.dist(a, b) for a, b in itertools.pairwise(ends))
        if kind == "a":
            segment = max(segment * math.pi / 2, 2 * math.pi * max(abs(args[0]), abs(args[1])))
        if kind != "m":
            total += segment
        else:
            start = points[-1]
            command = "l" if relative else "L"  # pairs after a moveto are lines
        at, args = points[-1], []
    return total


def _pairs(args: list[float]) -> list[tuple[float, float]]:
    return list(zip(args[::2], args[1::2], strict=False))


def _first(text: str, default: float) -> float:
    match = _NUMBER.search(text)
    return float(match.group(0)) if match else default
