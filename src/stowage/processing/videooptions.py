"""``video_convert``'s options that are read into one value for every spelling, so that
one conversion is one job (its key is the normalised task): a clock (``5``, ``05``,
``5.0``, ``00:00:05`` are 5 seconds) and a file extension (``.MP4`` is ``mp4``)."""

from __future__ import annotations

import re

from stowage import words
from stowage.processing.base import Value
from stowage.processing.params import spelled_number

_CLOCK = re.compile(r"([0-9]{1,2}):(?:([0-9]{1,2}):)?([0-9]{1,2}(?:\.[0-9]{1,40})?)")
_EXTNAME = re.compile(r"\.?[a-z0-9]{1,8}")


def clock(value: Value) -> Value:
    """``HH:MM:SS``, ``MM:SS`` or seconds (the schema's clock form; seconds as any number
    is spelled) as seconds, to the millisecond: one value, and one job, for every
    spelling (``5``, ``05``, ``5.0``, ``00:00:05``)."""
    number = spelled_number(value)
    if isinstance(number, int | float) and not isinstance(number, bool):
        seconds = float(number)
    else:
        seconds = _clock_text(words.trimmed(str(value)))
    if not 0 <= seconds <= 86_399:
        raise ValueError("must be a time of day below 24:00:00")
    seconds = round(seconds, 3)
    return int(seconds) if seconds.is_integer() else seconds


def _clock_text(text: str) -> float:
    found = _CLOCK.fullmatch(text)  # ASCII digits: int() reads any script's
    if not found:
        raise ValueError("must be HH:MM:SS, MM:SS or seconds")
    first, second, last = found.groups()
    hours, minutes = (int(first), int(second)) if second is not None else (0, int(first))
    if minutes > 59 or float(last) >= 60:
        raise ValueError("must be a time of day below 24:00:00")
    return hours * 3600 + minutes * 60 + float(last)


def extension(value: Value) -> Value:
    """``extname`` as the extension alone, in lower case: ``.MP4`` and ``mp4`` are one."""
    plain = isinstance(value, str | int) and not isinstance(value, bool)  # 264: an int
    name = words.folded(words.trimmed(str(value))) if plain else ""
    if not _EXTNAME.fullmatch(name):
        raise ValueError("must be a file extension such as .mp4")
    return name.lstrip(".")
