"""Parameter checks of the task table: each turns a parsed URL value into the value an
operation reads, or raises ``ValueError`` with a reason the 400 answer quotes."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from stowage import booleans, words
from stowage.core import names
from stowage.processing.base import Value
from stowage.processing.colornames import RGB

Convert = Callable[[Value], Value]
_HEX = re.compile(r"(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})")
#: A number the grammar leaves as text (``007``, ``+5``, ``5.``), or as a program prints
#: a computed one (``133.33333333333334``, ``1e-7``, ``5e-05``): a numeric check reads it.
NUMBER_TEXT = r"(?:[0-9]{1,12}(?:\.[0-9]{0,40})?|\.[0-9]{1,40})(?:[eE][+-]?[0-9]{1,3})?"
_SPELLED = re.compile(r"[+-]?0*" + NUMBER_TEXT)
#: name -> red, green, blue, alpha: the CSS names, gray0..gray100, and transparent/none.
COLOR_NAMES: dict[str, tuple[int, int, int, int]] = {
    **{name: (*rgb, 255) for name, rgb in RGB.items()},
    "transparent": (0, 0, 0, 0),
    "none": (0, 0, 0, 0),
}
ALIGNS = ("center", "middle", "top", "bottom", "left", "right", "faces")
#: Image formats a result may be saved in; ``pjpg`` is a progressive JPEG.
FORMATS = ("jpg", "jpeg", "pjpg", "png", "webp", "avif", "gif", "tiff", "svg")


def spelled_number(value: Value) -> Value:
    """A number spelled as the grammar leaves it text (leading zeros, a plus sign, a bare
    point, seventeen digits or an exponent) as that number; anything else as it is. A
    saved URL the hosted service took with ``width:0100`` must still work, and a check
    that is not a number never sees it."""
    if not isinstance(value, str) or not _SPELLED.fullmatch(value):
        return value
    return int(value) if value.lstrip("+-").isdigit() else float(value)


@dataclass(frozen=True)
class Integer:
    """A whole number from ``low`` to ``high``: what the SDK schema types ``integer``. A
    decimal in the range is taken, rounded half up (``amount:2.5`` is 3), as ``Whole``
    rounds: one rule for every whole-number option (docs/transformations.md)."""

    low: int
    high: int

    def __call__(self, given: Value) -> Value:
        value = spelled_number(given)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"must be a whole number from {self.low} to {self.high}")
        if not self.low <= value <= self.high:
            raise ValueError(f"must be from {self.low} to {self.high}")
        return half_up(value, given)


def half_up(value: int | float | Fraction, given: Value | None = None) -> int:
    """``value`` rounded to the nearest whole number, half up, not to even: 2.5 is 3.
    Exactly, from the text ``given`` when it is one: a float of 100.49999999999999999999
    is 100.5, and ``value + 0.5`` rounds 0.49999999999999994 up to 1. The one rounding of
    the engine's sizes too (Python's ``round()`` is half to even: a polaroid frame of 6%
    of 75 px was 4, ``partial_pixelate=amount:2.5`` a block of 2); a ratio of whole
    numbers is passed as a ``Fraction``, exact (``0.06 * 75`` is no exact 4.5)."""
    exact = Fraction(given) if isinstance(given, str) else Fraction(value)
    return math.floor(exact + Fraction(1, 2))


class NotGiven(Exception):
    """The value means the parameter is not given: the grammar leaves it out."""


@dataclass(frozen=True)
class Whole:
    """A number from ``low`` to ``high`` rounded to the nearest whole one: a side, a
        percentage or an angle that the SDK schema types as a number (``width:150.5``).
        ``zero_unset``: 0, which the schema allows, means not given (``resize=w:0,h:200``
        resizes by height). ``modulo``: the whole number wraps, and anything below ``modulo``
    is taken (359.6 degrees is 0)."""

    low: int
    high: int
    zero_unset: bool = False
    modulo: int = 0

    def __call__(self, given: Value) -> Value:
        value = spelled_number(given)
        floor = 0 if self.zero_unset else self.low
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"must be a number from {floor} to {self.high}")
        if not floor <= value <= self.high and not (self.modulo and floor <= value < self.modulo):
            raise ValueError(f"must be from {floor} to {self.high}")
        whole = half_up(value, given)
        if self.zero_unset and whole == 0:  # 0.4 too: it is 0 once rounded, not 1
            raise NotGiven
        return whole % self.modulo if self.modulo else min(self.high, max(self.low, whole))


@dataclass(frozen=True)
class Number:
    """A number (whole or decimal) from ``low`` to ``high``."""

    low: float
    high: float

    def __call__(self, value: Value) -> Value:
        value = spelled_number(value)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"must be a number from {self.low} to {self.high}")
        if not self.low <= value <= self.high:
            raise ValueError(f"must be from {self.low} to {self.high}")
        return value


@dataclass(frozen=True)
class Choice:
    """One of ``names``, ASCII case-insensitive; the lower-case name."""

    names: tuple[str, ...]

    def __call__(self, value: Value) -> Value:
        if not isinstance(value, str) or words.folded(value) not in self.names:
            raise ValueError(f"must be one of {', '.join(self.names)}")
        return words.folded(value)


@dataclass(frozen=True)
class ChoiceOrNone(Choice):
    """One of ``names``, or empty text, which means not given: an option whose SDK schema
    types it as any text with the default ``""`` (``urlscreenshot``'s ``device``), so that
    filestack-js builds ``device:`` for it, which must not be refused."""

    def __call__(self, value: Value) -> Value:
        if value == "":
            raise NotGiven
        return super().__call__(value)


@dataclass(frozen=True)
class Either:
    """What ``first`` accepts, else what ``second`` does."""

    first: Convert
    second: Convert

    def __call__(self, value: Value) -> Value:
        try:
            return self.first(value)
        except ValueError as first:
            try:
                return self.second(value)
            except ValueError as second:  # both reasons: "must be one of exif" misled
                raise ValueError(f"{first}; or {second}") from None


# The checks are small classes (not closures) so that the table can be read back: the
# docs list each range and the catalogue's test generates values in and out of it.
def integer(low: int, high: int) -> Convert:
    return Integer(low, high)


def whole(low: int, high: int, *, zero_unset: bool = False, modulo: int = 0) -> Convert:
    return Whole(low, high, zero_unset, modulo)


def number(low: float, high: float) -> Convert:
    return Number(low, high)


def choice(*names: str) -> Convert:
    return Choice(names)


def either(first: Convert, second: Convert) -> Convert:
    return Either(first, second)


def boolean(value: Value) -> Value:
    """``true false 1 0 yes no on off``, any case, as the one boolean parser reads them
    (``stowage/booleans.py``) for every other flag of the service."""
    if isinstance(value, bool):
        return value
    word = words.word(str(value))
    if isinstance(value, tuple) or word not in booleans.WORDS:
        raise ValueError(f"must be one of {', '.join(booleans.WORDS)}")
    return word in booleans.TRUE


@dataclass(frozen=True)
class Text:
    """Text as sent, at most ``longest`` characters. The grammar hands a text parameter
    its value unread (``"FALSE"`` and ``"007"`` stay text, not a boolean or a number)."""

    longest: int
    many: bool = False  # a list of texts (at most 32) or one

    def __call__(self, value: Value) -> Value:
        if self.many:
            items = value if isinstance(value, tuple) else (value,)
            return tuple(Text(self.longest)(v) for v in items[:32])
        if isinstance(value, tuple) or len(str(value)) > self.longest:
            raise ValueError(f"must be a text of at most {self.longest} characters")
        return str(value)


text = Text(1024)
texts = Text(1024, many=True)


def color(value: Value) -> Value:
    name = words.folded(str(value))
    if isinstance(value, tuple) or not (name in COLOR_NAMES or _HEX.fullmatch(name)):
        raise ValueError("must be a color: a name or RRGGBB / RRGGBBAA hex")
    return name


def dims(value: Value) -> Value:
    if not isinstance(value, tuple) or len(value) != 4:
        raise ValueError("must be [x,y,width,height]")
    checked = tuple(integer(0, 1_000_000)(v) for v in value)
    if checked[2] == 0 or checked[3] == 0:
        raise ValueError("width and height must be above 0")
    return checked


def align(value: Value) -> Value:
    """One position, or a vertical and a horizontal one in either order, returned as
    ``(vertical, horizontal)``; a pair that contradicts itself is refused."""
    items = value if isinstance(value, tuple) else (value,)
    if not 1 <= len(items) <= 2:
        raise ValueError(f"must be one or two of {', '.join(ALIGNS)}")
    checked = tuple(str(choice(*ALIGNS)(v)) for v in items)
    if len(checked) == 1:
        return checked[0]
    first, second = checked
    if first in _EITHER and second in _EITHER:  # the middle both ways
        return ("center", "center")
    for vertical, horizontal in ((first, second), (second, first)):
        if vertical in _VERTICAL and horizontal in _HORIZONTAL and {vertical, horizontal} - _EITHER:
            return (vertical, horizontal)
    raise ValueError("a pair is one of top, bottom, center, middle and one of left, right")


_EITHER = frozenset({"center", "middle"})


_VERTICAL = frozenset({"top", "bottom", "center", "middle"})
_HORIZONTAL = frozenset({"left", "right", "center", "middle"})


def rgba(name: str) -> tuple[int, int, int, int]:
    """A checked color as red, green, blue, alpha (0-255)."""
    if name in COLOR_NAMES:
        return COLOR_NAMES[name]
    if len(name) == 3:
        name = "".join(c * 2 for c in name)
    if len(name) == 6:
        name += "ff"
    r, g, b, a = (int(name[i : i + 2], 16) for i in range(0, 8, 2))
    return r, g, b, a


def handle(value: Value) -> Value:
    """A stored file's handle (20 letters, digits, ``_`` or ``-``)."""
    if not isinstance(value, str) or not names.is_handle(value):
        raise ValueError("must be a file handle")
    return value
