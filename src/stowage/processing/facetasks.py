"""The face tasks: ``detect_faces``, ``crop_faces``, ``pixelate_faces``, ``blur_faces``.

Parameters, defaults, ranges and short names are the hosted service's (its facial
detection documentation) and filestack-js 4.3.8's schema; docs/transformations.md says
where Stowage differs. Faces are numbered left to right from 1 (``faces:2``).

Each operation first keeps the image at that step in memory (``copy_memory``): the
finder reads it once and the operation reads it again, and a pipeline that streams
from the file (a first ``resize`` shrinks on load) can only be read once.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from fractions import Fraction

import pyvips

from stowage import words
from stowage.processing import decisions, faces, filters, ops, profiles
from stowage.processing.base import Output, Task, Value
from stowage.processing.faces import Box
from stowage.processing.geometry import proportional
from stowage.processing.params import (
    boolean,
    choice,
    color,
    half_up,
    integer,
    number,
    rgba,
    whole,
)
from stowage.processing.shownframe import Frame
from stowage.processing.table import Answer, Param, TaskSpec

#: An answer's renderer: the image at the task's step -> the answer's text (as the
#: every ``Answer``: the engine saves that text in place of an image).
Renderer = Callable[[pyvips.Image, Task], str]
JSON = Output("json", "application/json", "json")
MAX_FACES = 1000
SIZE = number(0, 10_000)
SIDE = whole(1, 10_000)  # the SDK schema: a number
BUFFER = integer(0, 10_000)  # the SDK schema's range (the hosted docs say 1000)
UNBOUNDED = 10_000_000  # libvips' largest coordinate: a side that does not constrain


def face_choice(value: Value) -> Value:
    """``all``, one face number, or a list of them (1-1000), as the schema's facesDef."""
    if isinstance(value, str) and words.folded(value) == "all":
        return "all"
    items = value if isinstance(value, tuple) else (value,)
    if not 1 <= len(items) <= MAX_FACES:
        raise ValueError("must be all, a face number or a list of them")
    checked = tuple(integer(1, MAX_FACES)(v) for v in items)
    return checked[0] if not isinstance(value, tuple) else checked


def _sizes(default_faces: Value | None) -> tuple[Param, ...]:
    return (
        Param("faces", face_choice, ("f",), default_faces),
        Param("minsize", SIZE, ("n",), 0.35),
        Param("maxsize", SIZE, ("x",), 0.35),
    )


def found(image: pyvips.Image, task: Task, default_faces: Value) -> list[Box]:
    """The faces the task selects, after the size filters and ``faces``, in the stored
    pixels."""
    frame = Frame.of(image)
    return [Box(*frame.stored(box.rect)) for box in found_shown(image, task, default_faces)]


def found_shown(image: pyvips.Image, task: Task, default_faces: Value) -> list[Box]:
    """The faces the task selects, as the picture is shown (``shownframe``)."""
    boxes = faces.filtered(
        faces.detect_shown(image),
        float(task.get("minsize", 0.35)),  # type: ignore[arg-type]
        float(task.get("maxsize", 0.35)),  # type: ignore[arg-type]
    )
    wanted = task.get("faces", default_faces)
    if wanted == "all":
        return boxes
    numbers = dict.fromkeys(wanted if isinstance(wanted, tuple) else (wanted,))  # once each
    return [boxes[n - 1] for n in numbers if isinstance(n, int) and n <= len(boxes)]


# -- detect_faces --------------------------------------------------------------
def detect_faces(image: pyvips.Image, task: Task) -> pyvips.Image:
    """Outlines each face found in ``color``."""
    image = ops.in_memory(image)
    boxes = found(image, task, "all")
    if not boxes:
        return image
    r, g, b, a = rgba(str(task.get("color", "000000ff")))
    if image.bands < 3:
        image = image.colourspace("srgb")
    r, g, b = profiles.ink(image, (r, g, b))  # shown as asked on a kept profile
    stroke = max(2, half_up(Fraction(max(image.width, image.height), 250)))
    outlines = [_outline(box, stroke, [r, g, b], a) for box in boxes]
    drawn = image.composite(
        outlines, "over", x=[box.x for box in boxes], y=[box.y for box in boxes]
    )
    return drawn.cast("uchar") if image.hasalpha() else drawn[:3].cast("uchar")


def _outline(box: Box, stroke: int, ink: list[int], alpha: int) -> pyvips.Image:
    """An RGBA tile the size of ``box``: ``ink`` on its edges, clear inside."""
    inner_w, inner_h = box.width - 2 * stroke, box.height - 2 * stroke
    if inner_w <= 0 or inner_h <= 0:
        edge = pyvips.Image.black(box.width, box.height) + alpha
    else:
        edge = (pyvips.Image.black(inner_w, inner_h) + 0).embed(
            stroke, stroke, box.width, box.height, extend="background", background=[alpha]
        )
    colour = (pyvips.Image.black(box.width, box.height) + ink).cast("uchar")
    return colour.bandjoin(edge.cast("uchar")).copy(interpretation="srgb")


def export_faces(image: pyvips.Image, task: Task) -> list[dict[str, int]] | None:
    """``detect_faces=export:true``: the boxes, ``[{x, y, width, height}, ...]``; None
    without ``export:true`` (the task then outlines them on the image)."""
    if task.get("export") is not True:
        return None
    return [box.as_json() for box in found(image.copy_memory(), task, "all")]


def exported_faces(image: pyvips.Image, task: Task) -> str:
    """The answer of ``detect_faces=export:true``, as JSON text."""
    return json.dumps([box.as_json() for box in found(image.copy_memory(), task, "all")])


# -- crop_faces -----------------------------------------------------------------
def crop_faces(image: pyvips.Image, task: Task) -> pyvips.Image:
    """Crops to the selected faces (with ``buffer`` percent around them unless ``mode``
    is crop) and, with width and height, to exactly that size: ``thumb`` and ``crop``
    widen the box to the wanted shape (every face stays in), ``fill`` narrows it."""
    image = ops.in_memory(image)
    boxes = decisions.decided(lambda: found_shown(image, task, 1))  # an animation: frame 1's
    if not boxes:
        return image  # nothing to crop to: the image as it is
    frame = Frame.of(image)
    x, y, width, height = frame.stored(_cut(boxes, task, frame).rect)
    crop = image.extract_area(x, y, width, height)
    want_w, want_h = task.get("width"), task.get("height")
    if isinstance(want_w, int) and isinstance(want_h, int):
        return ops.scaled(crop, want_w, want_h, "force")
    if isinstance(want_w, int):
        return ops.scaled(crop, want_w, UNBOUNDED)
    if isinstance(want_h, int):
        return ops.scaled(crop, UNBOUNDED, want_h)
    return crop


def _cut(boxes: list[Box], task: Task, frame: Frame) -> Box:
    """What crop_faces cuts around ``boxes``, in the picture as it is shown."""
    mode = str(task.get("mode", "thumb"))
    shown_w, shown_h = frame.shown_size
    box = faces.union(boxes)
    if mode != "crop":
        box = box.grown(float(task.get("buffer", 200)), shown_w, shown_h)  # type: ignore[arg-type]
    want_w, want_h = task.get("width"), task.get("height")
    if isinstance(want_w, int) and isinstance(want_h, int):
        aspect_w, aspect_h = frame.turned(want_w, want_h)
        box = _shaped(box, aspect_w / aspect_h, mode == "fill", shown_w, shown_h)
    return box


def crop_faces_size(task: Task, width: int, height: int) -> tuple[int, int]:
    """At most: the size asked, or the image's when no face is found, side by side. One
    side asked: the other from the image's proportion or a square box's, the larger (the
    faces' box is not known before they are found)."""
    want_w, want_h = task.get("width"), task.get("height")
    if isinstance(want_w, int) and isinstance(want_h, int):
        made = (want_w, want_h)
    elif isinstance(want_w, int):
        made = (want_w, max(want_w, proportional(height, width, want_w)))
    elif isinstance(want_h, int):
        made = (max(want_h, proportional(width, height, want_h)), want_h)
    else:
        return width, height
    return max(made[0], width), max(made[1], height)


def _shaped(box: Box, aspect: float, inside: bool, outer_w: int, outer_h: int) -> Box:
    """A box of ``aspect`` (width/height) around ``box`` (or inside it), centred on it
    and kept within the image (shrunk to fit when the image is too small)."""
    wider = box.width / box.height < aspect
    if wider != inside:
        width, height = box.height * aspect, float(box.height)
    else:
        width, height = float(box.width), box.width / aspect
    fit = min(1.0, outer_w / width, outer_h / height)
    width, height = max(1, half_up(width * fit)), max(1, half_up(height * fit))
    left, top = faces.window_at(box.centre, width, height, outer_w, outer_h)
    return Box(left, top, min(width, outer_w), min(height, outer_h))


# -- pixelate_faces, blur_faces -------------------------------------------------
def pixelate_faces(image: pyvips.Image, task: Task) -> pyvips.Image:
    """Pixelates each selected face: blocks of ``amount`` percent of its box's size."""
    amount = int(task.get("amount", 10))  # type: ignore[arg-type]

    def cover(patch: pyvips.Image) -> pyvips.Image:
        block = max(2, half_up(Fraction(max(patch.width, patch.height) * amount, 100)))
        return _softened(filters.blocks(patch, block), float(task.get("blur", 4)))  # type: ignore[arg-type]

    return _over_faces(image, task, cover)


def blur_faces(image: pyvips.Image, task: Task) -> pyvips.Image:
    """Blurs each selected face (Gaussian, sigma from ``amount`` and ``blur``)."""
    sigma = math.hypot(float(task.get("amount", 10)), float(task.get("blur", 4)))  # type: ignore[arg-type]
    return _over_faces(image, task, lambda patch: _softened(patch, sigma))


def _over_faces(
    image: pyvips.Image, task: Task, cover: Callable[[pyvips.Image], pyvips.Image]
) -> pyvips.Image:
    image = ops.in_memory(image)
    buffer = float(task.get("buffer", 0))  # type: ignore[arg-type]
    frame = Frame.of(image)
    for face in found_shown(image, task, "all"):
        box = Box(*frame.stored(face.grown(buffer, *frame.shown_size).rect))
        patch = image.extract_area(box.x, box.y, box.width, box.height)
        # blocks are laid from the face's top left corner as it is shown
        covered = frame.stored_patch(cover(frame.shown_patch(patch))).cast(patch.format)
        if task.get("type", "rect") == "oval":
            covered = _oval(box).ifthenelse(covered, patch)
        image = image.insert(covered, box.x, box.y)
    return image


def _softened(patch: pyvips.Image, sigma: float) -> pyvips.Image:
    return filters.blurred(patch, sigma) if sigma >= 0.5 else patch


def _oval(box: Box) -> pyvips.Image:
    xy = pyvips.Image.xyz(box.width, box.height) + 0.5
    rx, ry = box.width / 2, box.height / 2
    return ((xy[0] - rx) / rx) ** 2 + ((xy[1] - ry) / ry) ** 2 <= 1


FACES_TYPE = choice("rect", "oval")
TASKS: tuple[TaskSpec, ...] = (
    TaskSpec(
        "detect_faces",
        (
            Param("minsize", SIZE, ("n",), 0.35),
            Param("maxsize", SIZE, ("x",), 0.35),
            Param("color", color, ("c",), "000000ff"),
            Param("export", boolean, ("e",), False),
        ),
        op=detect_faces,
        random_access=True,
        doc="outlines the faces found; export:true answers their boxes as JSON",
        answer=Answer(exported_faces, JSON, when=lambda task: task.get("export") is True),
    ),
    TaskSpec(
        "crop_faces",
        (
            Param("mode", choice("thumb", "crop", "fill"), ("m",), "thumb"),
            Param("width", SIDE, ("w",)),
            Param("height", SIDE, ("h",)),
            *_sizes(1),
            Param("buffer", BUFFER, ("b",), 200),
        ),
        op=crop_faces,
        size=crop_faces_size,
        random_access=True,
        doc="crops to the selected faces",
    ),
    TaskSpec(
        "pixelate_faces",
        (
            *_sizes("all"),
            Param("buffer", BUFFER, ("b",)),
            Param("amount", integer(2, 100), ("a",), 10),
            Param("blur", number(0, 20), ("l",), 4),
            Param("type", FACES_TYPE, ("t",), "rect"),
        ),
        op=pixelate_faces,
        random_access=True,
        doc="pixelates the selected faces",
    ),
    TaskSpec(
        "blur_faces",
        (
            *_sizes("all"),
            Param("buffer", BUFFER, ("b",)),
            Param("amount", number(0, 20), ("a",), 10),
            Param("blur", number(0, 20), ("l",), 4),
            Param("type", FACES_TYPE, ("t",), "rect"),
        ),
        op=blur_faces,
        random_access=True,
        doc="blurs the selected faces",
    ),
)
