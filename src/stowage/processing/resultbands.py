"""The fewest bands a chain's result has, for the least size of an uncompressed result
(a TIFF), refused before any work when over the output byte limit; and whether alpha is
sure to be left after a task, for the estimate."""

from __future__ import annotations

from collections.abc import Mapping

from stowage import errors
from stowage.processing import catalogue, params
from stowage.processing.base import Chain, Task
from stowage.processing.table import Kind

#: Tasks that may make a colour image grey (one band): for the size of an uncompressed
#: result, every other keeps the colour bands (a test generates their options).
GREYING = frozenset({"monochrome", "blackwhite"})


def check_bytes(
    size: tuple[int, int, int], source: tuple[int, bool, bool], chain: Chain, cap: int
) -> None:
    """An uncompressed result (a TIFF) of ``size`` (``cost.made_size``) takes at least a byte
    a band of each pixel: refused before any work when that is over ``cap`` bytes (the
    save would only find it after the work). ``source``: the source's bands, whether one
    is alpha, whether it is CMYK."""
    least = size[0] * size[1] * size[2] * least_bands(chain, *source)
    if least > cap:
        raise errors.ImageTooLarge(
            f"the result would be {size[0]}x{size[1]} uncompressed: over {cap} bytes"
        )


def least_bands(chain: Chain, bands: int, alpha: bool, cmyk_source: bool) -> int:
    """The fewest bands the result of ``chain`` has: colour (1 grey, 3 sRGB, 4 CMYK) and
    alpha, as each task makes them (``bands_after``; a test runs every task on every
    kind of source against it), then the output's colorspace and background."""
    colour, alpha = (1 if bands - alpha < 3 else 3), alpha
    for task in chain.tasks:
        kind = catalogue.TABLE[task.name].kind
        if kind is Kind.FILES:  # the images it places decide: the fewest
            colour, alpha = 1, False
        elif kind is Kind.IMAGE:
            colour, alpha = bands_after(task, colour, alpha)
    output = chain.merged("output")
    alpha = alpha and see_through(output, "background", "transparent")
    space = output.get("colorspace")
    return (4 if space == "cmyk" or (space == "input" and cmyk_source) else colour) + alpha


#: Tasks that make grey sRGB whatever their options (drawn colours only if not grey).
COLOURING = frozenset({"sepia"})
#: Tasks that put their image over ``background`` (the default here) after making it
#: partly transparent: alpha left unless that background is opaque.
OVER_BACKGROUND = {"vignette": "white", "torn_edges": "white", "shadow": "white"}
OVER_BACKGROUND |= {"polaroid": "white", "circle": "transparent"}
OVER_BACKGROUND |= {"rounded_corners": "transparent"}


def bands_after(task: Task, colour: int, alpha: bool) -> tuple[int, bool]:
    """The fewest colour bands and whether alpha is sure to be left after ``task``."""
    colour = 1 if task.name in GREYING else 3 if task.name in COLOURING else colour
    if task.name in OVER_BACKGROUND:
        return colour, see_through(dict(task.options), "background", OVER_BACKGROUND[task.name])
    if task.name == "border":  # over its background (its colour), then framed
        under = task.get("background", task.get("color", "black"))
        return colour, alpha and see_through({"b": under}, "b", "black")
    return colour, alpha or adds_alpha(task)


def adds_alpha(task: Task) -> bool:
    """A turn by other than a right angle on a partly transparent background: the
    image gains alpha to be drawn on (``ops.drawable``)."""
    deg = task.get("deg", 0)
    free = task.name == "rotate" and isinstance(deg, int) and deg % 90 != 0
    return free and see_through(dict(task.options), "background", "white")


def see_through(options: Mapping[str, object], name: str, default: str) -> bool:
    return params.rgba(str(options.get(name, default)))[3] < 255
