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
    """``image`` in blocks of ``side`` x ``side`` pixels laid from its top-left corner,
    each the mean of its pixels as shown; a block at the right or bottom edge is cut
    there and is the mean of the pixels it covers, so an image thinner than ``side`` is
    one block across. Every pixel is in a block: whole blocks only left the last
    columns and rows as they were (``pixelate=amount:2`` on 21x21 kept its last pixel),
    and a side cut to the image's short side made square blocks of a narrow box. No
    block is one pixel thin where the image is wider (``_cuts``): a cut corner block of
    one pixel was that pixel as it was, and a box of ``partial_pixelate`` put back over
    another showed it there, inside the other box."""
    return ops.premultiplied(image, lambda colours: _blocks(colours, side))


def _cuts(length: int, side: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """(start, length) of the whole blocks along an axis, and of the cut block after them;
    a cut of one pixel joins the last whole block (``side`` + 1 long)."""
    whole = length - length % side
    if length - whole == 1 and whole >= side:
        whole -= side
    return (0, whole), (whole, length - whole)


def _blocks(image: pyvips.Image, side: int) -> pyvips.Image:
    """The whole blocks, and the cut ones at the right, at the bottom and in the corner,
    each part in blocks of its own size, the parts joined."""
    fine = (image.cast("ushort") << 8) if image.format == "uchar" else image
    across_cuts, down_cuts = _cuts(image.width, side), _cuts(image.height, side)
    rows = []
    for row, (top, height) in enumerate(down_cuts):
        parts = []
        for column, (left, width) in enumerate(across_cuts):
            if width and height:
                part = fine.extract_area(left, top, width, height)
                across = width if column else min(side, width)  # the cut part: one block
                down = height if row else min(side, height)
                parts.append(_means(part, across, down, image.format).zoom(across, down))
        if parts:
            rows.append(parts[0] if len(parts) == 1 else parts[0].join(parts[1], "horizontal"))
    return rows[0] if len(rows) == 1 else rows[0].join(rows[1], "vertical")


def _means(part: pyvips.Image, across: int, down: int, format_: str) -> pyvips.Image:
    """The means of ``part``'s ``across`` x ``down`` blocks in ``format_``, rounded once.
    libvips rounds down after each axis (up to two thirds of a level each: a block came
    out 1.2 levels under its mean), so 8-bit bands come here as 16-bit ones scaled by
    256. Across, then down: down first held ``down`` rows of the whole width per box
    (fifty full-size boxes over 12 megapixels: 60 MB more)."""
    means = part.shrinkh(across).shrinkv(down)
    return means if part.format == format_ else ((means + 128) >> 8).cast(format_)


TASKS: tuple[TaskSpec, ...] = (
    TaskSpec("blur", (Param("amount", AMOUNT, ("a",), 2),), op=blur, doc="gaussian blur"),
    TaskSpec("sharpen", (Param("amount", AMOUNT, ("a",), 2),), op=sharpen, doc="unsharp mask"),
    TaskSpec(
        "pixelate",
        (Param("amount", integer(2, 100), ("a",), 2),),
        op=pixelate,
        random_access=True,  # the cut blocks at the right and bottom are read as parts
        # Its blocks straddle libvips' tiles: what came before was computed about twice
        # (oil_paint=amount:20 then pixelate=amount:54 on 9 MP: 5.4 s; held, 2.9 s).
        measures=True,
        doc="blocks of amount x amount pixels",
    ),
)
