"""Shape tasks: circle, rounded_corners, border."""

from __future__ import annotations

import pyvips

from stowage.processing import ops
from stowage.processing.base import Task
from stowage.processing.params import choice, color, either, integer, number, rgba
from stowage.processing.table import Param, TaskSpec


def circle(image: pyvips.Image, task: Task) -> pyvips.Image:
    xy = pyvips.Image.xyz(image.width, image.height)
    rx, ry = image.width / 2, image.height / 2
    inside = ((xy[0] + 0.5 - rx) / rx) ** 2 + ((xy[1] + 0.5 - ry) / ry) ** 2 <= 1
    return ops.masked(image, inside, task)


def rounded_corners(image: pyvips.Image, task: Task) -> pyvips.Image:
    limit = min(image.width, image.height) / 2
    radius = task.get("radius", 10)
    r = limit if radius == "max" else min(float(radius), limit)  # type: ignore[arg-type]
    xy = pyvips.Image.xyz(image.width, image.height) + 0.5
    x, y = xy[0], xy[1]
    dx = (x < r).ifthenelse(r - x, (x > image.width - r).ifthenelse(x - (image.width - r), 0))
    dy = (y < r).ifthenelse(r - y, (y > image.height - r).ifthenelse(y - (image.height - r), 0))
    inside = (dx * dx + dy * dy) <= r * r
    softness = float(task.get("blur", 0.3))  # type: ignore[arg-type]
    if softness > 0:
        inside = inside.gaussblur(softness)
    return ops.masked(image, inside, task)


def border(image: pyvips.Image, task: Task) -> pyvips.Image:
    width = int(task.get("width", 2))  # type: ignore[arg-type]
    if width == 0:
        return image
    colour = str(task.get("color", "black"))
    if rgba(colour)[3] < 255:
        image = ops.with_alpha(image)
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
