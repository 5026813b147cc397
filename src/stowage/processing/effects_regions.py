"""Effects on chosen regions of the image: partial_pixelate and partial_blur.

``objects`` lists up to 50 boxes ``[x,y,width,height]``; each box is cut out, changed and
put back (``insert``), so the work is proportional to the boxes, not the image, and the
rest of the image streams through untouched. A box is clipped to the image; one that
starts outside it changes nothing. ``type:oval`` changes the ellipse inscribed in the box
only. Boxes may overlap: a pixel inside any box's shape is changed, in any order of the
boxes; where ellipses or feathered edges are involved, a map of the boxes' area (a byte a
pixel) says which box, or how much, shows at each pixel.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyvips

from stowage.processing import params
from stowage.processing.base import Task, Value
from stowage.processing.effects import real
from stowage.processing.filters import blocks, blurred
from stowage.processing.ops import mixed, srgb
from stowage.processing.table import Param, TaskSpec

MAX_OBJECTS = 50
MASK_SIDE = 256  # a box's mask is computed at most this big, then enlarged
STRIP = 256  # rows of the masks compared at a time
EDGE_SLOPE = 32  # a hard edge's mask: levels a pixel of the small copy, 0-255 over eight
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


def _shape(width: int, height: int, oval: bool, soft: float) -> Any:
    """How much of the change shows at each pixel of a box, 0 to 255 (a uint8 numpy
    array): all of it inside, falling to nothing over ``soft`` pixels at the box's (or
    ellipse's) edge.

    Computed on a copy of at most ``MASK_SIDE`` a side (64 kB) and enlarged by OpenCV
    (in the wheel for the face finder): a pipeline of float operations per box, at the
    box's size, held ~300 MB for fifty boxes over a 3-megapixel image, and libvips'
    linear enlargement took 0.25 s a 12-megapixel box (OpenCV: 7 ms). Each side of the
    copy is shrunk on its own: shrunk as a whole, a long thin box kept its short side at
    a tenth (an oval of 312 x 2467 had half its perimeter's pixels on the wrong side of
    its ellipse, and a box 8 pixels tall and 2,600 wide one row, its feathering lost)."""
    import cv2

    w, h = min(width, MASK_SIDE), min(height, MASK_SIDE)
    xy = pyvips.Image.xyz(w, h) + 0.5
    if soft > 0:  # the distance in the box's pixels, feathered over ``soft`` of them
        inside = _inside(xy[0] * (width / w), xy[1] * (height / h), width, height, oval)
        weight = (inside / soft).minpair(1).maxpair(0) * 255
    elif (w, h) == (width, height):
        weight = (_inside(xy[0], xy[1], w, h, oval) > 0).ifthenelse(255, 0)
    else:
        # A hard edge enlarged: the distance to it in the copy's pixels, not a 0/255
        # step, is what the linear enlargement keeps (a step became a staircase of the
        # copy's pixels); 128 is the edge, within a pixel at any size.
        weight = (_inside(xy[0], xy[1], w, h, oval) * EDGE_SLOPE + 128).minpair(255).maxpair(0)
    # always rows x columns: pyvips gives a 1x1 one-band image as a 0-d array, which
    # crashed the job for a 1-pixel box (or one clipped to an image's corner)
    small = weight.cast("uchar").numpy().reshape(h, w)
    if (w, h) == (width, height):
        return small
    cv2.setNumThreads(1)  # a job process has one core's share; libvips has its own threads
    return cv2.resize(small, (width, height), interpolation=cv2.INTER_LINEAR).reshape(height, width)


def _inside(x: pyvips.Image, y: pyvips.Image, w: float, h: float, oval: bool) -> pyvips.Image:
    """How far each point (``x``, ``y``) lies inside the box ``w`` x ``h`` (or its
    ellipse), negative outside."""
    if oval:
        nx, ny = (x - w / 2) / (w / 2), (y - h / 2) / (h / 2)
        # distance to the ellipse's edge, roughly in pixels of the shorter half-axis
        return (1 - (nx * nx + ny * ny) ** 0.5) * (min(w, h) / 2)
    return x.minpair(w - x).minpair(y.minpair(h - y))


def _area(boxes: list[Box]) -> Box:
    """The smallest box that holds ``boxes``."""
    left, top = min(x for x, *_ in boxes), min(y for _, y, *_ in boxes)
    right = max(x + w for x, _, w, _ in boxes)
    return left, top, right - left, max(y + h for _, y, _, h in boxes) - top


def _changed(image: pyvips.Image, task: Task, change: Change) -> pyvips.Image:
    """Each box changed whole (no feathered edge): a pixel inside boxes' shapes shows the
    change of the last box whose shape holds it, whatever the order, and one outside
    them all is the source's. Every box's change is made from the source image, not
    from the image with the boxes before it put back: fifty nested pipelines, each
    asking the one below for a margin more, held gigabytes for a 3-megapixel image.
    Rectangles are put back in turn (``insert``); ellipses are picked per pixel from a
    map of which box shows there (each put back whole, its rectangle's corners showed
    the source where an earlier box had hidden them)."""
    boxes = clipped(image, task)
    if not boxes:
        return image
    if task.get("type", "rect") != "oval":
        for x, y, w, h in boxes:
            image = image.insert(change((x, y, w, h)), x, y)
        return image
    import numpy as np

    left, top, width, height = _area(boxes)
    shown = np.zeros((height, width), dtype=np.uint8)  # 0: the source; n: the nth box
    for number, (x, y, w, h) in reversed(list(enumerate(boxes, 1))):  # the last first
        area = shown[y - top : y - top + h, x - left : x - left + w]
        if area.all():  # the boxes after it cover it whole
            continue
        shape = _shape(w, h, oval=True, soft=0)
        for row in range(0, h, STRIP):  # a strip's comparison at a time, not the box's
            rows = slice(row, row + STRIP)
            np.copyto(area[rows], number, where=(shape[rows] >= 128) & (area[rows] == 0))
        del shape  # before the next box's is made
    below = image.extract_area(left, top, width, height)
    changes = [change(box).embed(box[0] - left, box[1] - top, width, height) for box in boxes]
    return image.insert(pyvips.Image.new_from_array(shown).case([below, *changes]), left, top)


def _feathered(image: pyvips.Image, task: Task, changed: pyvips.Image, soft: float) -> pyvips.Image:
    """The boxes' pixels of ``changed`` (the whole image changed), each box's edge
    feathered over ``soft`` pixels: at each pixel as much of the change as the box that
    covers it most shows, so in any order of the boxes, and a pixel past any box's
    feathered edge is changed (each box mixed against the source put the source's pixels
    back on a later box's edge, where an earlier box had hidden them). Mixed with colours
    weighted by alpha (``ops.mixed``): a colour under alpha 0 never shows."""
    boxes = clipped(image, task)
    if not boxes:
        return image
    import numpy as np

    oval = task.get("type", "rect") == "oval"
    left, top, width, height = _area(boxes)
    weight = np.zeros((height, width), dtype=np.uint8)
    for x, y, w, h in boxes:
        area = weight[y - top : y - top + h, x - left : x - left + w]
        if area.min() < 255:  # else the boxes before it cover it whole
            np.maximum(area, _shape(w, h, oval, soft), out=area)
    below = image.extract_area(left, top, width, height)
    mix = changed.extract_area(left, top, width, height)
    return image.insert(mixed(pyvips.Image.new_from_array(weight), mix, below), left, top)


class Pixelated:
    """A box of ``image`` in blocks of ``amount`` pixels (aligned to the box), then
    softened by a blur of sigma ``blur``."""

    def __init__(self, image: pyvips.Image, amount: int, blur: float) -> None:
        self.image, self.amount, self.blur = image, amount, blur

    def __call__(self, box: Box) -> pyvips.Image:
        region = self.image.extract_area(*box)
        pixels = blocks(region, self.amount)
        return blurred(pixels, self.blur) if self.blur > 0 else pixels


def partial_pixelate(image: pyvips.Image, task: Task) -> pyvips.Image:
    image = srgb(image)
    amount = int(task.get("amount", 10))  # type: ignore[arg-type]
    return _changed(image, task, Pixelated(image, amount, real(task, "blur", 4)))


def partial_blur(image: pyvips.Image, task: Task) -> pyvips.Image:
    image = srgb(image)
    sigma, soft = real(task, "amount", 10), real(task, "blur", 4)
    whole = blurred(image, sigma) if sigma > 0 else image
    if soft <= 0:
        return _changed(image, task, lambda box: whole.extract_area(*box))
    return _feathered(image, task, whole, soft)


SHAPE = params.choice("rect", "oval")
TASKS: tuple[TaskSpec, ...] = (
    TaskSpec(
        "partial_pixelate",
        (
            Param("objects", objects, ("o",)),
            # a block's side: a whole number, rounded half up as every side is
            # (amount:2.5 is 3, as pixelate's), where Python's round() made it 2
            Param("amount", params.whole(2, 100), short=("a",), default=10),
            Param("blur", params.number(0, 20), short=("l",), default=4),
            Param("type", SHAPE, short=("t",), default="rect"),
        ),
        op=partial_pixelate,
        needs_one_of=("objects",),
        random_access=True,  # boxes are cut from the image in their own order
        measures=True,  # each box reads its input again: held, computed once
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
        measures=True,  # each box reads its input again: held, computed once
        doc="blurs the boxes in objects (sigma amount, edges softened over blur pixels)",
    ),
)
