"""The size an SVG is drawn at, from its root element's ``width``, ``height`` and
``viewBox``: nothing drawn, no librsvg in the server process (SVGs are drawn in the job
processes only, after ``processing/svg.py`` checked them).

The rules are librsvg's intrinsic size, as libvips' SVG loader reads it at its 72 DPI
(measured with the bundled librsvg): lengths in ``px`` (or none), ``pt``, ``pc``,
``in``, ``cm``, ``mm``, ``em`` (12 px) and ``ex`` (6 px), rounded half up; a side given
as a percentage, not given, or not a length is the ``viewBox``'s, in proportion to the
other side when that one is given; both such sides and no ``viewBox``: librsvg draws the
extent of what the document draws, which only drawing tells (None here). A zero side is
refused by the engine (None). A side taken from the ``viewBox``'s proportion may be one
pixel off librsvg's when it is tens of thousands of pixels long (2 of 15,272 generated
roots: 80,515.5 and 873,343.51 drawn 80,515 and 873,343, 1,593,244.44 drawn 1,593,245;
no one rounding rule gives all three).
"""

from __future__ import annotations

import math
import re
from xml.parsers import expat

#: Pixels a unit at 72 DPI (libvips' SVG loader), em and ex of librsvg's default font.
_UNITS = {
    "": 1.0, "px": 1.0, "pt": 1.0, "pc": 12.0, "in": 72.0, "cm": 72 / 2.54,
    "mm": 72 / 25.4, "em": 12.0, "ex": 6.0,
}  # fmt: skip
_LENGTH = re.compile(r"\s*([+]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*([a-zA-Z%]*)\s*")
_VIEWBOX = re.compile(r"[\s,]+")


class _Root(Exception):
    """Raised by the parser at the first element: its name and attributes."""

    def __init__(self, name: str, attributes: dict[str, str]) -> None:
        super().__init__(name)
        self.name, self.attributes = name, attributes


class _Refused(Exception):
    """A document type with declarations (entities, ...): the engine refuses it, and
    nothing is expanded here."""


def drawn_size(head: bytes) -> tuple[int, int] | None:
    """(width, height) the SVG document starting with ``head`` is drawn at, or None when
    that cannot be told from its root element (or it is no SVG)."""
    root = _root(head)
    if root is None or root.name.rsplit(":", 1)[-1] != "svg":
        return None
    width, height = _length(root.attributes.get("width")), _length(root.attributes.get("height"))
    box = _view_box(root.attributes.get("viewBox"))
    if width is not None and height is not None:
        sides = width, height
    elif box is None:
        return None
    elif width is not None:
        sides = width, width * box[1] / box[0]
    elif height is not None:
        sides = height * box[0] / box[1], height
    else:
        sides = box
    if not all(math.isfinite(side) for side in sides):
        return None
    drawn_w, drawn_h = (math.floor(side + 0.5) for side in sides)
    return (drawn_w, drawn_h) if drawn_w > 0 and drawn_h > 0 else None


def _root(head: bytes) -> _Root | None:
    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)

    def start(name: str, attributes: dict[str, str]) -> None:
        raise _Root(name, attributes)

    def declared(*_: object) -> None:
        raise _Refused

    def doctype(_name: str, _system: str | None, _public: str | None, internal: int) -> None:
        if internal:  # declarations: refused by the engine (processing/svg.py)
            raise _Refused

    parser.StartElementHandler = start
    parser.StartDoctypeDeclHandler = doctype
    parser.EntityDeclHandler = declared
    try:
        parser.Parse(head, False)
    except _Root as root:
        return root
    except Exception:  # any parser failure on untrusted bytes (an encoding, ...): unknown
        return None
    return None


def _length(value: str | None) -> float | None:
    """A length in pixels; None for a percentage, an unknown unit, a negative or no value
    (librsvg's 100%: the viewBox's side)."""
    found = _LENGTH.fullmatch(value or "")
    unit = found.group(2).lower() if found else "%"
    if found is None or unit not in _UNITS:
        return None
    return float(found.group(1)) * _UNITS[unit]


def _view_box(value: str | None) -> tuple[float, float] | None:
    parts = _VIEWBOX.split((value or "").strip())
    try:
        _, _, width, height = (float(part) for part in parts)
    except ValueError:  # not four numbers
        return None
    finite = math.isfinite(width) and math.isfinite(height)
    return (width, height) if finite and width > 0 and height > 0 else None
