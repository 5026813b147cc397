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
from stowage.processing.filters import blocks, blurred
from stowage.processing.ops import srgb
from stowage.processing.table import Param, TaskSpec

MAX_OBJECTS = 50
MASK_SIDE = 256  # a box's mask is computed at most this big, then enlarged
Box = tuple[int, int, int, int]
#: What happens to one box: its changed pixels.
Change = Callable[[Box], pyvips.Image]


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
    """How much of the change shows at each pixel of a box, 0 to 255: all of it inside,
    falling to nothing over ``soft`` pixels at the box's (or ellipse's) edge.

    Computed on a copy of at most ``MASK_SIDE`` a side, held in memory (64 kB) and
    enlarged: a pipeline of float operations per box, at the box's size, held ~300 MB
    for fifty boxes over a 3-megapixel image."""
    scale = min(1.0, MASK_SIDE / max(width, height))
    w, h = max(1, round(width * scale)), max(1, round(height * scale))
    xy = pyvips.Image.xyz(w, h) + 0.5
    x, y = xy[0], xy[1]
    if oval:
        nx, ny = (x - w / 2) / (w / 2), (y - h / 2) / (h / 2)
        # distance to the ellipse's edge, roughly in pixels of the shorter half-axis
        inside = (1 - (nx * nx + ny * ny) ** 0.5) * (min(w, h) / 2)
    else:
        inside = x.minpair(w - x).minpair(y.minpair(h - y))
    if soft * scale <= 0:
        weight = (inside > 0).ifthenelse(255, 0)
    else:
        weight = (inside / (soft * scale)).minpair(1).maxpair(0) * 255
    small = weight.cast("uchar").copy_memory()
    if (w, h) == (width, height):
        return small
    return small.resize(width / w, vscale=height / h, kernel="linear")


def _apply(image: pyvips.Image, task: Task, change: Change, soft: float) -> pyvips.Image:
    """Every box's change is made from the source image, not from the image with the
    boxes before it put back: fifty nested pipelines, each asking the one below for a
    margin more, held gigabytes for a 3-megapixel image. Where boxes overlap, the later
    one shows."""
    oval = task.get("type", "rect") == "oval"
    result = image
    for x, y, w, h in clipped(image, task):
        changed = change((x, y, w, h))
        if oval or soft > 0:
            region = image.extract_area(x, y, w, h)
            changed = _shape(w, h, oval, soft).ifthenelse(changed, region, blend=True)
        result = result.insert(changed, x, y)
    return result


class Pixelated:
    """A box of ``image`` in blocks of ``amount`` pixels (aligned to the box), then
    softened by a blur of sigma ``blur``."""

    def __init__(self, image: pyvips.Image, amount: int, blur: float) -> None:
        self.image, self.amount, self.blur = image, amount, blur

    def __call__(self, box: Box) -> pyvips.Image:
        region = self.image.extract_area(*box)
        pixels = blocks(region, self.amount)
        return blurred(pixels, self.blur) if self.blur > 0 else pixels


class Blurred:
    """A box of ``image`` blurred with sigma ``sigma``: cut from one blur of the whole
    image (lazy: libvips computes only the parts the boxes show), so that a box's edges
    are blurred with the pixels around them."""

    def __init__(self, image: pyvips.Image, sigma: float) -> None:
        self.blurred = blurred(image, sigma) if sigma > 0 else image

    def __call__(self, box: Box) -> pyvips.Image:
        return self.blurred.extract_area(*box)


def partial_pixelate(image: pyvips.Image, task: Task) -> pyvips.Image:
    image = srgb(image)
    amount = round(real(task, "amount", 10))
    return _apply(image, task, Pixelated(image, amount, real(task, "blur", 4)), soft=0)


def partial_blur(image: pyvips.Image, task: Task) -> pyvips.Image:
    image = srgb(image)
    blurred = Blurred(image, real(task, "amount", 10))
    return _apply(image, task, blurred, soft=real(task, "blur", 4))


SHAPE = params.choice("rect", "oval")
TASKS: tuple[TaskSpec, ...] = (
    TaskSpec(
        "partial_pixelate",
        (
            Param("objects", objects, ("o",)),
            Param("amount", params.number(2, 100), short=("a",), default=10),
            Param("blur", params.number(0, 20), short=("l",), default=4),
            Param("type", SHAPE, short=("t",), default="rect"),
        ),
        op=partial_pixelate,
        needs_one_of=("objects",),
        random_access=True,  # boxes are cut from the image in their own order
        doc="pixelates the boxes in objects (blocks of amount pixels, then blurred by blur)",
    ),
    TaskSpec(
        "partial_blur",
        (
            Param("objects", objects, ("o",)),
            Param("amount", params.number(0, 20), short=("a",), default=10),
            Param("blur", params.number(0, 20), short=("l",), default=4),
            Param("type", SHAPE, short=("t",), default="rect"),
        ),
        op=partial_blur,
        needs_one_of=("objects",),
        random_access=True,  # boxes are cut from the image in their own order
        doc="blurs the boxes in objects (sigma amount, edges softened over blur pixels)",
    ),
)
