"""Shape tasks: circle, rounded_corners, border."""

from __future__ import annotations

import math

import pyvips

from stowage.processing import ops
from stowage.processing.base import Task
from stowage.processing.params import choice, color, either, integer, number
from stowage.processing.table import Param, TaskSpec


def circle(image: pyvips.Image, task: Task) -> pyvips.Image:
    xy = pyvips.Image.xyz(image.width, image.height)
    rx, ry = image.width / 2, image.height / 2
    inside = ((xy[0] + 0.5 - rx) / rx) ** 2 + ((xy[1] + 0.5 - ry) / ry) ** 2 <= 1
    return ops.masked(image, inside, task)


def rounded_corners(image: pyvips.Image, task: Task) -> pyvips.Image:
    """Only the corners differ from the image (and, without a background, its alpha):
    one corner's mask is computed, on a tile reaching past the arc by the blur's reach
    (blurring the tile gives what blurring the whole mask gives there), and mirrored into
    the other three. Computing every pixel's distance in floats and blurring it, then
    compositing the whole image, cost a 2-megapixel photo five times its decode."""
    width, height = image.width, image.height
    r, softness, side = corner_tile(task, width, height)
    if 2 * side > min(width, height):  # the corners meet: the whole mask
        return ops.masked(image, _mask_tile(width, height, r, softness), task)
    tile = _mask_tile(side, side, r, softness, whole=(width, height))
    right, bottom = width - side, height - side
    corners = (
        (tile, 0, 0),
        (tile.fliphor(), right, 0),
        (tile.flipver(), 0, bottom),
        (tile.rot180(), right, bottom),
    )
    background = task.get("background")
    if background is not None:  # red corners on a grey photo: the photo becomes sRGB
        image = ops.drawable(image, str(background))
    if background is not None and image.format == "uchar" and not image.hasalpha():
        for mask, left, top in corners:
            piece = image.extract_area(left, top, side, side)
            image = image.insert(ops.masked(piece, mask, task), left, top)
        return image
    whole = (pyvips.Image.black(width, height) + 255).cast("uchar")
    for mask, left, top in corners:
        whole = whole.insert(mask, left, top)
    return ops.masked(image, whole, task)


def corner_tile(task: Task, width: int, height: int) -> tuple[float, float, int]:
    """rounded_corners' radius, blur and the side of one corner's tile (past the arc by
    the blur's reach) on a ``width`` x ``height`` image; the cost estimate reads it too."""
    radius = task.get("radius", 10)
    limit = min(width, height) / 2
    r = limit if radius == "max" else min(float(radius), limit)  # type: ignore[arg-type]
    softness = float(task.get("blur", 0.3))  # type: ignore[arg-type]
    return r, softness, math.ceil(r + 3 * softness) + 2


def blurred_pixels(task: Task, width: int, height: int) -> int:
    """Pixels the mask's blur covers on a ``width`` x ``height`` image: the four corner
    tiles, or the whole mask, each grown by the blur's mirrored margin (``_mask_tile``);
    the cost estimate reads it."""
    _, softness, side = corner_tile(task, width, height)
    pad = 2 * (math.ceil(3 * softness) + 1) if softness else 0
    if 2 * side > min(width, height):
        return (width + pad) * (height + pad)
    return 4 * (side + pad) * (side + pad)


def _mask_tile(
    width: int, height: int, r: float, softness: float, whole: tuple[int, int] | None = None
) -> pyvips.Image:
    """The mask's top-left ``width`` x ``height`` pixels, of a mask ``whole`` in size
    (the tile's own size by default)."""
    outer_w, outer_h = whole or (width, height)
    xy = pyvips.Image.xyz(width, height) + 0.5
    x, y = xy[0], xy[1]
    dx = (x < r).ifthenelse(r - x, (x > outer_w - r).ifthenelse(x - (outer_w - r), 0))
    dy = (y < r).ifthenelse(r - y, (y > outer_h - r).ifthenelse(y - (outer_h - r), 0))
    inside = (dx * dx + dy * dy) <= r * r
    if softness == 0:
        return inside
    # Past the image's edges the mask is mirrored, not copied: copying spread the corner
    # pixel's 0 over a quarter plane beyond it, which the blur pulled along both edges
    # and, on a small image, into the middle (40x30, blur 20: its centre at alpha 223).
    # Mirrored, a straight edge stays opaque and only the arcs soften, the same in a
    # corner's tile as in a whole small mask. In floats: libvips' integer kernel sums to
    # a little under 1, which made the whole image slightly transparent (255 to 251).
    pad = math.ceil(3 * softness) + 1
    grown = inside.embed(pad, pad, width + 2 * pad, height + 2 * pad, extend="mirror")
    blurred = grown.gaussblur(softness, precision="float").extract_area(pad, pad, width, height)
    return blurred.rint().cast("uchar")


def border(image: pyvips.Image, task: Task) -> pyvips.Image:
    """A frame of ``color`` around the picture, and ``background`` (by default the
    ``color``) under the picture: an opaque one is flattened onto, a partly transparent
    one composited under it, the alpha kept (the Colors rule of the tasks whose colour is
    their ground). A transparent logo framed in red was a red frame around a transparent
    middle, and ``background`` was ignored."""
    width = int(task.get("width", 2))  # type: ignore[arg-type]
    if width == 0:
        return image
    colour = str(task.get("color", "black"))
    image = ops.drawable(ops.over(image, str(task.get("background", colour))), colour)
    return image.embed(
        width,
        width,
        image.width + 2 * width,
        image.height + 2 * width,
        extend="background",
        background=ops.bands(image, colour),
    )


def _border_size(task: Task, width: int, height: int) -> tuple[int, int]:
    side = task.get("width", 2)
    grow = 2 * side if isinstance(side, int) else 0
    return width + grow, height + grow


TASKS: tuple[TaskSpec, ...] = (
    TaskSpec(
        "circle",
        (Param("background", color, ("b",)),),
        op=circle,
        random_access=True,
        doc="an ellipse inscribed in the image",
    ),
    TaskSpec(
        "rounded_corners",
        (
            Param("radius", either(integer(1, 10_000), choice("max")), ("r",), 10),
            Param("blur", number(0, 20), ("l",), 0.3),
            Param("background", color, ("b",)),
        ),
        op=rounded_corners,
        aliases=("round_corners",),
        random_access=True,
        doc="rounded corners",
    ),
    TaskSpec(
        "border",
        (
            Param("width", integer(0, 1000), ("w",), 2),  # 0: no frame, as hosted
            Param("color", color, ("c",), "black"),
            Param("background", color, ("b",)),
        ),
        op=border,
        size=_border_size,
        doc="a frame around the image",
    ),
)
