"""The face finder: OpenCV's Haar cascades (``haarcascade_frontalface_alt2`` for faces,
``haarcascade_eye`` for eyes), whose trained models ship inside the
``opencv-python-headless`` wheel (``cv2.data``), so nothing is downloaded at run time.

Detection runs on a grey copy of the image rendered from the lazy pipeline with its
longest side at most ``DETECT_SIDE`` pixels (a few hundred kilobytes whatever the image),
and the boxes are scaled back to the image's own coordinates. It runs in the job
processes only, like every other pixel operation (``worker.py``): OpenCV is imported on
first use there, under the job's address-space limit. docs/transformations.md says how
well it finds faces on the photos the tests use.
"""

from __future__ import annotations

import functools
import math
import statistics
from dataclasses import dataclass
from typing import Any

import pyvips

from stowage.processing import shownframe
from stowage.processing.params import half_up
from stowage.processing.shownframe import Frame

#: The longest side of the copy the cascades read. The cascades find faces from about
#: 34 px of that copy up (MIN_FACE is where they start looking), so from a thirtieth of
#: the image's longest side. A cascade's cost grows with the pixels and with the
#: pyramid's levels: a 1.2 step took a third of the time of 1.1 and found the same faces
#: in the photos the tests use; 640 px would be faster again but miss the faces of a
#: group photo (a twentieth of the side).
DETECT_SIDE = 1024
MIN_FACE = 24  # pixels of that copy (the cascade's own window is 20x20)
SCALE_STEP = 1.2  # the cascade's scale pyramid step
WINDOW = 20  # the cascade's own window, pixels
#: search_share's allowance for each level's own work (its shrunk copy and sums) and
#: for content that reads more of each window than noise
SHARE_MARGIN = 1.25
NEIGHBOURS = 5  # overlapping hits a face needs: fewer finds more, and more that are not
#: A window placed on faces (``align:faces``, ``smart_crop``) looks for faces of at least
#: this share of its shorter side: smaller ones cost the search most of its time (its
#: finest scales: 370 ms of a 1600x1200 photo's 1024-px copy from 24 px, 60-80 ms from
#: a twelfth of a 300x300 cut of it) and hardly show in the cut.
CUT_SHARE = 12


@dataclass(frozen=True)
class Box:
    x: int
    y: int
    width: int
    height: int

    @property
    def right(self) -> int:
        return self.x + self.width

    @property
    def bottom(self) -> int:
        return self.y + self.height

    @property
    def rect(self) -> shownframe.Rect:
        return self.x, self.y, self.width, self.height

    @property
    def centre(self) -> tuple[int, int]:
        return self.x + self.width // 2, self.y + self.height // 2

    def grown(self, percent: float, width: int, height: int) -> Box:
        """Grown by ``percent`` of its size (half on each side), within width x height."""
        extra_w, extra_h = self.width * percent / 200, self.height * percent / 200
        left, top = max(0, half_up(self.x - extra_w)), max(0, half_up(self.y - extra_h))
        right = min(width, half_up(self.right + extra_w))
        bottom = min(height, half_up(self.bottom + extra_h))
        return Box(left, top, max(1, right - left), max(1, bottom - top))

    def as_json(self) -> dict[str, int]:
        return {"x": self.x, "y": self.y, "width": self.width, "height": self.height}


def union(boxes: list[Box]) -> Box:
    left, top = min(b.x for b in boxes), min(b.y for b in boxes)
    right, bottom = max(b.right for b in boxes), max(b.bottom for b in boxes)
    return Box(left, top, right - left, bottom - top)


def detect(image: pyvips.Image) -> list[Box]:
    """Faces in ``image``, in its stored pixels (where the tasks draw and cut; the result
    keeps the tag, and is shown turned as the source), left to right (then top to
    bottom) as it is shown: the order ``faces:N`` counts in."""
    frame = Frame.of(image)
    return [Box(*frame.stored(box.rect)) for box in detect_shown(image)]


def detect_shown(image: pyvips.Image, smallest: float = 0) -> list[Box]:
    """Faces in ``image`` as it is shown, in the shown picture's coordinates; none under
    ``smallest`` pixels of it looked for. An image tagged with an Exif orientation (a
    phone's portrait photo: its pixels lie sideways, tag 6) is searched as it is shown,
    the cascade finding upright faces only."""
    least = least_face(smallest / search_scale(image.width, image.height))
    return _search(image, "haarcascade_frontalface_alt2.xml", NEIGHBOURS, DETECT_SIDE, least)


def least_face(smallest: float) -> int:
    """The least face the cascade looks for in its copy, for faces of ``smallest``
    pixels of that copy."""
    return max(MIN_FACE, math.ceil(smallest))


def search_share(width: int, height: int, least: int) -> float:
    """The share of a search from ``MIN_FACE`` that one from ``least`` takes, in a copy
    of ``width`` x ``height``: the windows the cascade reads, as OpenCV places them
    (``windows``), with a quarter more for what each level costs besides. On 1024x768
    noise (one thread, 2026-12-07): from 48 px 0.43 of the time from 24, the windows'
    0.44; from 64 0.19, 0.19; from 128 0.033, 0.033; on a 640x480 photo 0.48/0.42,
    0.22/0.18, 0.15/0.11 (from 48, 64, 85)."""
    whole = windows(width, height, MIN_FACE)
    if least <= MIN_FACE or whole == 0:
        return 1.0
    return min(1.0, SHARE_MARGIN * windows(width, height, least) / whole)


def windows(width: int, height: int, least: int) -> float:
    """The windows OpenCV's ``detectMultiScale`` reads in a ``width`` x ``height`` image
    for faces from ``least`` pixels: at each level of its pyramid (the image shrunk by
    ``SCALE_STEP`` again and again while the 20-px window fits) whose window is at least
    ``least``, one window every 2 pixels of the shrunk image up to a shrink of 2, every
    pixel beyond (its ``yStep``)."""
    total, factor = 0.0, 1.0
    while (window := round(WINDOW * factor)) <= min(width, height):
        if window >= least:
            across = max(0, round(width / factor) - WINDOW + 1)
            down = max(0, round(height / factor) - WINDOW + 1)
            total += across * down / (1 if factor > 2 else 4)
        factor *= SCALE_STEP
    return total


def eyes(image: pyvips.Image, face: Box) -> list[Box]:
    """Eyes inside ``face`` (stored pixels), looked for in its upper part as shown."""
    area = image.extract_area(face.x, face.y, face.width, face.height)
    frame = Frame.of(area)
    found = _search(area, "haarcascade_eye.xml", 3, 256, least=8, upper=0.6)
    return [_shifted(Box(*frame.stored(box.rect)), face.x, face.y) for box in found]


def _search(
    image: pyvips.Image, name: str, neighbours: int, side: int, least: int = MIN_FACE,
    upper: float = 1,
) -> list[Box]:  # fmt: skip
    """What cascade ``name`` finds in ``image`` (its ``upper`` part) as it is shown, in
    the shown picture's coordinates, left to right."""
    import numpy as np

    turn = _SHOWN.get(shownframe.orientation(image))
    grey = _small_grey(image, side)
    shown = grey if turn is None else turn(grey)
    top = max(1, int(shown.shape[0] * upper))
    found = _cascade(name).detectMultiScale(
        np.ascontiguousarray(shown[:top]), SCALE_STEP, neighbours, minSize=(least, least)
    )
    shown_w, shown_h = Frame.of(image).shown_size
    scale = shown_w / shown.shape[1]  # the shown copy back to the shown picture
    boxes = sorted((tuple(int(v) for v in box) for box in found), key=lambda b: b[:2])
    return [_scaled(box, scale, shown_w, shown_h) for box in boxes]


#: How a picture tagged with an Exif orientation is turned to be shown, as libvips'
#: ``autorot`` turns it (numpy's views of the stored rows and columns).
_SHOWN: dict[int, Any] = {
    2: lambda a: a[:, ::-1],
    3: lambda a: a[::-1, ::-1],
    4: lambda a: a[::-1, :],
    5: lambda a: a.T,
    6: lambda a: a.T[:, ::-1],
    7: lambda a: a[::-1, ::-1].T,
    8: lambda a: a.T[::-1, :],
}


def filtered(boxes: list[Box], minsize: float, maxsize: float) -> list[Box]:
    """The hosted service's size filters: a value above 1 is a size in pixels; from 0 to 1
    a fraction of the middle (median) face's size below (minsize) or above (maxsize)
    which a box is dropped. 0 leaves that side unfiltered."""
    if not boxes:
        return boxes
    middle = statistics.median(max(b.width, b.height) for b in boxes)
    low = minsize if minsize > 1 else middle * (1 - minsize) if minsize > 0 else 0
    high = maxsize if maxsize > 1 else middle * (1 + maxsize) if maxsize > 0 else float("inf")
    return [b for b in boxes if low <= max(b.width, b.height) <= high]


def faces_offset(
    image: pyvips.Image, width: int, height: int, seen: pyvips.Image | None = None
) -> tuple[int, int] | None:
    """Where a ``width`` x ``height`` window of ``image`` is centred on its faces, kept
    inside the image; None when no face is found. ``seen``: the same picture at another
    size, searched instead (its faces' centre scaled to ``image``). The window is placed
    in the picture as it is shown (``shownframe``). Faces under ``CUT_SHARE`` of the
    window's shorter side are not looked for."""
    searched = image if seen is None else seen
    boxes = detect_shown(searched, min(width, height) / CUT_SHARE * searched.width / image.width)
    if not boxes:
        return None
    x, y = union(boxes).centre
    seen_w, seen_h = Frame.of(searched).shown_size
    frame = Frame(shownframe.orientation(searched), image.width, image.height)
    shown_w, shown_h = frame.shown_size
    return _window(frame, (x * shown_w // seen_w, y * shown_h // seen_h), width, height)


def anchor(
    image: pyvips.Image, width: int, height: int, seen: pyvips.Image | None = None
) -> tuple[int, int]:
    """Where a ``width`` x ``height`` window of ``image`` starts for ``align:faces``:
    centred on its faces (looked for in ``seen`` when given), or on its centre when none
    is found. What is searched is read twice (by the finder, then by the cut): a copy in
    memory, or one opened for random access."""
    offset = faces_offset(image, width, height, seen)
    if offset is None:
        frame = Frame.of(image)
        shown_w, shown_h = frame.shown_size
        return _window(frame, (shown_w // 2, shown_h // 2), width, height)
    return offset


def _window(frame: Frame, centre: tuple[int, int], width: int, height: int) -> tuple[int, int]:
    """Where a stored ``width`` x ``height`` window centred on ``centre`` (of the shown
    picture) starts in the stored pixels."""
    shown_w, shown_h = frame.shown_size
    window_w, window_h = frame.turned(width, height)
    window_w, window_h = min(window_w, shown_w), min(window_h, shown_h)
    left, top = window_at(centre, window_w, window_h, shown_w, shown_h)
    x, y, _, _ = frame.stored((left, top, window_w, window_h))
    return x, y


def window_at(
    centre: tuple[int, int], width: int, height: int, outer_w: int, outer_h: int
) -> tuple[int, int]:
    left = min(max(0, centre[0] - width // 2), max(0, outer_w - width))
    top = min(max(0, centre[1] - height // 2), max(0, outer_h - height))
    return left, top


def search_scale(width: int, height: int, side: int = DETECT_SIDE) -> float:
    """How much the face finder shrinks a ``width`` x ``height`` image to search it
    (1: not at all); the cost estimate reads it too."""
    return max(1.0, max(width, height) / side)


def _small_grey(image: pyvips.Image, side: int) -> Any:
    """A uint8 numpy array of the image in grey, its longest side at most ``side``."""
    import numpy as np

    scale = search_scale(image.width, image.height, side)
    small = image if scale == 1.0 else image.resize(1 / scale)
    if small.hasalpha():
        small = small.flatten(background=[255] * (small.bands - 1))
    grey = small.colourspace("b-w")[0].cast("uchar")
    pixels = np.frombuffer(grey.write_to_memory(), dtype=np.uint8)
    return pixels.reshape(grey.height, grey.width)


def _scaled(box: tuple[int, ...], scale: float, width: int, height: int) -> Box:
    x, y, w, h = (half_up(v * scale) for v in box)
    x, y = min(x, width - 1), min(y, height - 1)
    return Box(x, y, max(1, min(w, width - x)), max(1, min(h, height - y)))


def _shifted(box: Box, dx: int, dy: int) -> Box:
    return Box(box.x + dx, box.y + dy, box.width, box.height)


@functools.cache
def _cascade(name: str) -> Any:
    """A trained cascade from the wheel's own data directory, loaded once per process."""
    import cv2
    import cv2.data

    cv2.setNumThreads(1)  # a job process has one core's share; libvips has its own threads
    cascade = cv2.CascadeClassifier(cv2.data.haarcascades + name)
    if cascade.empty():  # a broken install: a server fault, not the client's image
        raise RuntimeError(f"OpenCV cascade {name} did not load")
    return cascade
