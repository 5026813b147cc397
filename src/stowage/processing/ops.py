"""Pixel helpers every operations module shares: 8-bit sRGB, alpha, flattening, colors
as band values, and shapes as alpha masks. The operations themselves live in the theme
modules (``geometry``, ``colour``, ``filters``, ``shapes``...), each beside its tasks'
declarations; ``catalogue`` gathers them.
"""

from __future__ import annotations

import pyvips

from stowage.processing.base import Task
from stowage.processing.params import rgba


def srgb(image: pyvips.Image) -> pyvips.Image:
    """Every task works on 8-bit sRGB (or grey), with or without alpha."""
    if image.interpretation not in ("srgb", "b-w"):
        image = image.colourspace("srgb")
    if image.format != "uchar":
        image = image.cast("uchar")
    return image


def flatten(image: pyvips.Image, colour: str) -> pyvips.Image:
    if not image.hasalpha():
        return image
    r, g, b, _ = rgba(colour)
    plain = image.flatten(background=[r, g, b] if image.bands > 2 else [r])
    return plain.cast("uchar")


def with_alpha(image: pyvips.Image) -> pyvips.Image:
    return image if image.hasalpha() else image.bandjoin(255)


def bands(image: pyvips.Image, colour: str) -> list[float]:
    r, g, b, a = rgba(colour)
    grey = 0.2126 * r + 0.7152 * g + 0.0722 * b
    base: list[float] = [r, g, b] if image.bands >= 3 else [grey]
    return [*base, a] if image.hasalpha() else base


def split_alpha(image: pyvips.Image) -> tuple[pyvips.Image, pyvips.Image | None]:
    if image.hasalpha():
        return image.extract_band(0, n=image.bands - 1), image[image.bands - 1]
    return image, None


def join_alpha(image: pyvips.Image, alpha: pyvips.Image | None) -> pyvips.Image:
    return image if alpha is None else image.bandjoin(alpha)


def masked(image: pyvips.Image, mask: pyvips.Image, task: Task) -> pyvips.Image:
    """``image`` shown where ``mask`` is set, transparent (or ``background``) elsewhere."""
    colour, alpha = split_alpha(image)
    shape = mask.cast("uchar")  # relational results are 0/255 already
    alpha = shape if alpha is None else (alpha * (shape / 255)).cast("uchar")
    shaped = colour.bandjoin(alpha)
    background = task.get("background")
    if background is None:
        return shaped
    return flatten(shaped, str(background))
