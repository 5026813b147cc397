"""The area an SVG shape fills, as a fraction of the canvas (``svgdraw`` prices a fill
by it), and the lengths it is read from."""

from __future__ import annotations

from collections.abc import Mapping

from stowage.processing.svgrefs import NUMBER


def length(text: str | None, default: float) -> float:
    """A length in user units (a percentage or a unit other than px: ``default``)."""
    if text is None:
        return default
    text = text.strip()
    match = NUMBER.fullmatch(text.removesuffix("px").strip())
    return float(match.group(0)) if match else default


def box(canvas: tuple[float, float], local: str, attributes: Mapping[str, str]) -> float:
    """The element's box as a fraction of the canvas (1: unknown, or the canvas)."""
    width, height = canvas
    if width <= 0 or height <= 0:
        return 1.0
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
        return 1.0
    return min(1.0, max(0.0, w) * max(0.0, h) / (width * height))


def polygon(canvas: tuple[float, float], points: str) -> float:
    """A polygon's area (the shoelace formula) as a fraction of the canvas, at most
    that of its box within the canvas (a self-crossing one's parts may cancel: its
    points are priced besides)."""
    width, height = canvas
    numbers = [float(n) for n in NUMBER.findall(points)]
    xs, ys = numbers[0::2], numbers[1::2][: len(numbers) // 2]
    if width <= 0 or height <= 0 or len(ys) < 3:
        return 0.0
    xs = xs[: len(ys)]
    turns = sum(
        x0 * y1 - x1 * y0
        for x0, y0, x1, y1 in zip(xs, ys, xs[1:] + xs[:1], ys[1:] + ys[:1], strict=True)
    )
    across = max(0.0, min(max(xs), width) - max(min(xs), 0.0))
    down = max(0.0, min(max(ys), height) - max(min(ys), 0.0))
    return min(abs(turns) / 2, across * down) / (width * height)
