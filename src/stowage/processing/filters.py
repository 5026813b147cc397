"""Filter tasks: blur, sharpen, pixelate."""

from __future__ import annotations

import pyvips

from stowage.processing import ops
from stowage.processing.base import Task
from stowage.processing.params import integer
from stowage.processing.table import Param, TaskSpec

#: A whole sigma, as the SDK schema types it (``amount:0.5`` is 1); 0: the image unchanged,
#: as the hosted service answers it.
AMOUNT = integer(0, 20)


def blur(image: pyvips.Image, task: Task) -> pyvips.Image:
    amount = float(task.get("amount", 2))  # type: ignore[arg-type]
    return image if amount == 0 else blurred(image, amount)


def blurred(image: pyvips.Image, sigma: float) -> pyvips.Image:
    """A Gaussian blur that mixes in no colour of a transparent pixel."""
    return ops.premultiplied(image, lambda colours: colours.gaussblur(sigma))


def sharpen(image: pyvips.Image, task: Task) -> pyvips.Image:
    amount = float(task.get("amount", 2))  # type: ignore[arg-type]
    if amount == 0:
        return image
    return ops.premultiplied(image, lambda colours: colours.sharpen(sigma=amount / 2))


def pixelate(image: pyvips.Image, task: Task) -> pyvips.Image:
    return blocks(image, int(task.get("amount", 2)))  # type: ignore[arg-type]


def blocks(image: pyvips.Image, side: int) -> pyvips.Image:
    """``image`` in blocks of ``side`` pixels, each the mean of its pixels as shown."""
    side = min(side, image.width, image.height)
    return ops.premultiplied(image, lambda colours: _blocks(colours, side))


def _blocks(image: pyvips.Image, side: int) -> pyvips.Image:
    big = image.shrink(side, side).zoom(side, side)
    if big.width < image.width or big.height < image.height:
        big = big.embed(0, 0, image.width, image.height, extend="copy")
    return big.extract_area(0, 0, image.width, image.height)


TASKS: tuple[TaskSpec, ...] = (
    TaskSpec("blur", (Param("amount", AMOUNT, ("a",), 2),), op=blur, doc="gaussian blur"),
    TaskSpec("sharpen", (Param("amount", AMOUNT, ("a",), 2),), op=sharpen, doc="unsharp mask"),
    TaskSpec(
        "pixelate",
        (Param("amount", integer(2, 100), ("a",), 2),),
        op=pixelate,
        doc="blocks of amount x amount pixels",
    ),
)
