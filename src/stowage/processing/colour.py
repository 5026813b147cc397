"""Colour tasks: monochrome, blackwhite, sepia, negative, modulate."""

from __future__ import annotations

import pyvips

from stowage.processing import ops
from stowage.processing.base import Task
from stowage.processing.params import integer
from stowage.processing.table import Param, TaskSpec


def monochrome(image: pyvips.Image, task: Task) -> pyvips.Image:
    return image.colourspace("b-w")


def blackwhite(image: pyvips.Image, task: Task) -> pyvips.Image:
    grey, alpha = ops.split_alpha(image.colourspace("b-w"))  # transparency kept
    limit = float(task.get("threshold", 50)) * 255 / 100  # type: ignore[arg-type]
    return ops.join_alpha((grey > limit).ifthenelse(255, 0).cast("uchar"), alpha)


def sepia(image: pyvips.Image, task: Task) -> pyvips.Image:
    tone = float(task.get("tone", 80)) / 100  # type: ignore[arg-type]
    colour, alpha = ops.split_alpha(ops.srgb(image).colourspace("srgb"))
    matrix = [[0.393, 0.769, 0.189], [0.349, 0.686, 0.168], [0.272, 0.534, 0.131]]
    full = colour.recomb(matrix)
    full = (full > 255).ifthenelse(255, full)  # the sepia clipped (its red reaches 345) ...
    toned = full * tone + colour * (1 - tone)  # ... then blended with the original
    return ops.join_alpha(toned.rint().cast("uchar"), alpha)


def negative(image: pyvips.Image, task: Task) -> pyvips.Image:
    colour, alpha = ops.split_alpha(image)
    return ops.join_alpha(colour.invert(), alpha)


def modulate(image: pyvips.Image, task: Task) -> pyvips.Image:
    """In LCh: brightness scales lightness and chroma together (0: black, the colour's
    saturation kept as it darkens), saturation scales chroma, hue turns the hue angle.
    Scaling only lightness left the chroma whole: brightness 0 was a dark blue, not black.
    A grey source stays grey: its chroma is 0, which no saturation or hue changes (it
    came out sRGB, three equal bands)."""
    source = ops.srgb(image)
    colour, alpha = ops.split_alpha(source.colourspace("srgb"))
    brightness = float(task.get("brightness", 100)) / 100  # type: ignore[arg-type]
    saturation = float(task.get("saturation", 100)) / 100  # type: ignore[arg-type]
    hue = float(task.get("hue", 0))  # type: ignore[arg-type]
    lch = colour.colourspace("lch") * [brightness, brightness * saturation, 1] + [0, 0, hue]
    result = lch.colourspace("srgb")
    if source.interpretation == "b-w":  # neutral sRGB to grey: its green band, exactly
        result = result.colourspace("b-w")
    return ops.join_alpha(result.cast("uchar"), alpha)


TASKS: tuple[TaskSpec, ...] = (
    TaskSpec("monochrome", op=monochrome, maps_colours=True, doc="greyscale"),
    TaskSpec(
        "blackwhite",
        (Param("threshold", integer(0, 100), ("t",), 50),),
        op=blackwhite,
        maps_colours=True,
        doc="pure black and white",
    ),
    TaskSpec(
        "sepia",
        (Param("tone", integer(0, 100), ("t",), 80),),
        op=sepia,
        maps_colours=True,
        doc="sepia",
    ),
    TaskSpec("negative", op=negative, maps_colours=True, doc="inverted colors (alpha kept)"),
    TaskSpec(
        "modulate",
        (
            Param("brightness", integer(0, 10_000), ("b",), 100),
            Param("hue", integer(0, 359), ("h",), 0),
            Param("saturation", integer(0, 10_000), ("s",), 100),
        ),
        op=modulate,
        maps_colours=True,
        doc="brightness, saturation, hue in LCh",
    ),
)
