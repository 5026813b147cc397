"""Effects on chosen regions of the image: partial_pixelate and partial_blur.

``objects`` lists up to 50 boxes ``[x,y,width,height]``; each box is cut out, changed and
put back (``insert``), so the work is proportional to the boxes, not the image, and the
rest of the image streams through untouched. A box is clipped to the image; one that
starts outside it changes nothing. ``type:oval`` changes the ellipse inscribed in the box
only.
"""

from __future__ import annotations

from collections.abc import Callable

import pyvips

from stowage.processing import params
from stowage.processing.base import Task, Value
from stowage.processing.effects import real
from stowage.processing.filters import pixelate
from stowage.processing.ops import srgb
from stowage.processing.table import Param, TaskSpec

MAX_OBJECTS = 50
Box = tuple[int, int, int, int]
#: What happens to one box (given the whole image, for context at its edges).
Change = Callable[[pyvips.Image, Box], pyvips.Image]


def objects(value: Value) -> Value:
    """``[[x,y,w,h],...]``: 1 to 50 boxes; x, y from 0 and w, h from 1, each to 10000."""
    boxes = value if isinstance(value, tuple) and value and isinstance(value[0], tuple) else None
    if boxes is None or not 1 <= len(boxes) <= MAX_OBJECTS:
        raise ValueError(f"must be 1 to {MAX_OBJECTS} boxes [[x,y,width,height],...]")
    checked = []
    for box in boxes:
        if not isinstance(box, tuple) or len(box) != 4:
            raise ValueError("each box must be [x,y,width,height]")
        x, y = (params.integer(0, 10_000)(v) for v in box[:2])
        w, h = (params.integer(1, 10_000)(v) for v in box[2:])
        checked.append((x, y, w, h))
    return tuple(checked)


def clipped(image: pyvips.Image, task: Task) -> list[Box]:
    boxes = task.get("objects", ())
    assert isinstance(boxes, tuple)
    inside = []
    for box in boxes:
        assert isinstance(box, tuple)
        x, y, w, h = (v if isinstance(v, int) else 0 for v in box)  # checked by objects()
        if x < image.width and y < image.height:
            inside.append((x, y, min(w, image.width - x), min(h, image.height - y)))
    return inside


def _shape(width: int, height: int, oval: bool, soft: float) -> pyvips.Image:
    """How much of the change shows at each pixel of a box, 0 to 1: all of it inside,
    falling to nothing over ``soft`` pixels at the box's (or ellipse's) edge."""
    xy = pyvips.Image.xyz(width, height) + 0.5
    x, y = xy[0], xy[1]
    if oval:
        nx, ny = (x - width / 2) / (width / 2), (y - height / 2) / (height / 2)
        # distance to the ellipse's edge, roughly in pixels of the shorter half-axis
        inside = (1 - (nx * nx + ny * ny) ** 0.5) * (min(width, height) / 2)
    else:
        inside = x.minpair(width - x).minpair(y.minpair(height - y))
    if soft <= 0:
        return (inside > 0).ifthenelse(1.0, 0.0)
    return (inside / soft).minpair(1).maxpair(0)


def _blend(original: pyvips.Image, changed: pyvips.Image, weight: pyvips.Image) -> pyvips.Image:
    return (changed * weight + original * (1 - weight)).cast(original.format)


def _apply(image: pyvips.Image, task: Task, change: Change, soft: float) -> pyvips.Image:
    image = srgb(image)
    oval = task.get("type", "rect") == "oval"
    for x, y, w, h in clipped(image, task):
        region = image.extract_area(x, y, w, h)
        changed = change(image, (x, y, w, h))
        if oval or soft > 0:
            changed = _blend(region, changed, _shape(w, h, oval, soft))
        image = image.insert(changed, x, y)
    return image


class Pixelated:
    """A box in blocks of ``amount`` pixels, then softened by a blur of ``blur``."""

    def __init__(self, amount: int, blur: float) -> None:
        self.amount, self.blur = amount, blur

    def __call__(self, image: pyvips.Image, box: Box) -> pyvips.Image:
        x, y, w, h = box
        blocks = pixelate(
            image.extract_area(x, y, w, h), Task("pixelate", (("amount", self.amount),))
        )
        return blocks.gaussblur(self.blur).cast(image.format) if self.blur > 0 else blocks


class Blurred:
    """A box blurred with sigma ``sigma``."""

    def __init__(self, sigma: float) -> None:
        self.sigma = sigma

    def __call__(self, image: pyvips.Image, box: Box) -> pyvips.Image:
        x, y, w, h = box
        if self.sigma <= 0:
            return image.extract_area(x, y, w, h)
        # blur a margin of context too, so that the box's edges do not darken or smear
        margin = int(3 * self.sigma) + 1
        left, top = max(0, x - margin), max(0, y - margin)
        right, bottom = min(image.width, x + w + margin), min(image.height, y + h + margin)
        around = image.extract_area(left, top, right - left, bottom - top).gaussblur(self.sigma)
        return around.extract_area(x - left, y - top, w, h).cast(image.format)


def partial_pixelate(image: pyvips.Image, task: Task) -> pyvips.Image:
    amount = round(real(task, "amount", 10))
    blur = real(task, "blur", 4)
    return _apply(image, task, Pixelated(amount, blur), soft=0)


def partial_blur(image: pyvips.Image, task: Task) -> pyvips.Image:
    amount = real(task, "amount", 10)
    blur = real(task, "blur", 4)
    return _apply(image, task, Blurred(amount), soft=blur)


SHAPE = params.choice("rect", "oval")
TASKS: tuple[TaskSpec, ...] = (
    TaskSpec(
        "partial_pixelate",
        (
            Param("objects", objects),
            Param("amount", params.number(2, 100), default=10),
            Param("blur", params.number(0, 20), default=4),
            Param("type", SHAPE, default="rect"),
        ),
        op=partial_pixelate,
        needs_one_of=("objects",),
        random_access=True,  # boxes are cut from the image in their own order
        doc="pixelates the boxes in objects (blocks of amount pixels, then blurred by blur)",
    ),
    TaskSpec(
        "partial_blur",
        (
            Param("objects", objects),
            Param("amount", params.number(0, 20), default=10),
            Param("blur", params.number(0, 20), default=4),
            Param("type", SHAPE, default="rect"),
        ),
        op=partial_blur,
        needs_one_of=("objects",),
        random_access=True,  # boxes are cut from the image in their own order
        doc="blurs the boxes in objects (sigma amount, edges softened over blur pixels)",
    ),
)
