"""Rectangles between a picture's stored pixels and the picture as its Exif orientation
shows it (a phone's portrait photo: its pixels lie sideways, tag 6).

The face tasks find faces, grow their boxes, place their windows and lay their blocks in
the picture as it is shown, then map what they cut or draw back to the stored pixels:
a photo stored turned is then worked on exactly where its upright twin is. The same
arithmetic done in the stored pixels landed a pixel off on a turned or mirrored axis
(every rounding of a half is one-sided: a window centred on a face of even width, a
box grown by a half pixel), which moved a 60 px cut of a face by 4-8 levels on average.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyvips

#: Rectangles as (x, y, width, height).
Rect = tuple[int, int, int, int]
#: The orientations whose turn swaps width and height.
TRANSPOSED = frozenset({5, 6, 7, 8})
#: The orientation whose turn undoes each one's; the others undo themselves.
_UNDOING = {6: 8, 8: 6}


def orientation(image: pyvips.Image) -> int:
    """The image's Exif orientation (1 when it has none, or none libvips knows)."""
    if not image.get_typeof("orientation"):
        return 1
    value = int(image.get("orientation"))
    return value if 1 <= value <= 8 else 1


def _shown_point(tag: int, x: int, y: int, width: int, height: int) -> tuple[int, int]:
    """Where stored pixel (x, y) of a ``width`` x ``height`` image is shown (libvips'
    ``autorot``)."""
    right, bottom = width - 1 - x, height - 1 - y
    points = {
        2: (right, y),
        3: (right, bottom),
        4: (x, bottom),
        5: (y, x),
        6: (height - 1 - y, x),
        7: (height - 1 - y, right),
        8: (y, right),
    }
    return points.get(tag, (x, y))


@dataclass(frozen=True)
class Frame:
    """A stored ``width`` x ``height`` image and its orientation ``tag``."""

    tag: int
    width: int
    height: int

    @classmethod
    def of(cls, image: pyvips.Image) -> Frame:
        return cls(orientation(image), image.width, image.height)

    @property
    def shown_size(self) -> tuple[int, int]:
        return self.turned(self.width, self.height)

    def turned(self, width: int, height: int) -> tuple[int, int]:
        """A stored size (a window's, a cut's) as it is shown."""
        return (height, width) if self.tag in TRANSPOSED else (width, height)

    def shown(self, rect: Rect) -> Rect:
        """A stored rectangle, as it is shown."""
        return _mapped(rect, self.tag, self.width, self.height)

    def stored(self, rect: Rect) -> Rect:
        """A rectangle of the shown picture, in the stored pixels."""
        return _mapped(rect, _UNDOING.get(self.tag, self.tag), *self.shown_size)

    def shown_patch(self, patch: pyvips.Image) -> pyvips.Image:
        """A piece of the stored pixels, turned as it is shown."""
        return _autorot(patch, self.tag)

    def stored_patch(self, patch: pyvips.Image) -> pyvips.Image:
        """A piece of the shown picture, turned back to the stored pixels."""
        return _autorot(patch, _UNDOING.get(self.tag, self.tag))


def _mapped(rect: Rect, tag: int, width: int, height: int) -> Rect:
    """``rect`` of a ``width`` x ``height`` image turned as ``tag`` turns it: its two
    opposite corner pixels, mapped."""
    x, y, w, h = rect
    x0, y0 = _shown_point(tag, x, y, width, height)
    x1, y1 = _shown_point(tag, x + w - 1, y + h - 1, width, height)
    return min(x0, x1), min(y0, y1), abs(x1 - x0) + 1, abs(y1 - y0) + 1


def _autorot(patch: pyvips.Image, tag: int) -> pyvips.Image:
    if tag == 1:
        return patch
    tagged = patch.copy()
    tagged.set_type(pyvips.GValue.gint_type, "orientation", tag)
    return tagged.autorot()
