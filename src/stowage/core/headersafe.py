"""Values that end up in a response header: refused when stored, repaired when served.

A mimetype travels back as ``Content-Type``; a CR, LF, NUL or any other control character
in it would make every later download of the file fail (aiohttp refuses to write such a
header and drops the connection). So a client's media type is checked against RFC 9110's
grammar and refused with a 400 (decisions.md: refuse, not repair: a type we would have to
guess at is not the one the client meant). Filenames are repaired instead (names.py), and
containers and keys are validated there. Rows stored before these checks existed are
still served: ``safe_header`` replaces whatever a header cannot carry.
"""

from __future__ import annotations

import functools
import re

from stowage import errors

MAX_MEDIA_TYPE = 255
_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_QUOTED = r'"(?:[\t\x20\x21\x23-\x5b\x5d-\x7e]|\\[\t\x20-\x7e])*"'
_MEDIA_TYPE = re.compile(
    rf"{_TOKEN}/{_TOKEN}(?:[ \t]*;[ \t]*{_TOKEN}=(?:{_TOKEN}|{_QUOTED}))*[ \t]*;?", re.ASCII
)
_UNSAFE = re.compile(r"[^\t\x20-\x7e]")
FALLBACK_TYPE = "application/octet-stream"


def is_media_type(value: str) -> bool:
    return len(value) <= MAX_MEDIA_TYPE and _MEDIA_TYPE.fullmatch(value.strip(" \t")) is not None


def media_type(value: str, parameter: str = "mimetype") -> str:
    """A client's media type, lowercased, or a 400 naming where it came from."""
    if not is_media_type(value):
        raise errors.InvalidParameter(
            f"{parameter} must be a media type like text/plain (printable ASCII, at most "
            f"{MAX_MEDIA_TYPE} characters)",
            parameter=parameter,
        )
    return value.strip(" \t").lower()


def declared_header(value: str | None, name: str = "Content-Type") -> str | None:
    """A request's own Content-Type: None when absent, a 400 when it is not a media type
    (non-UTF-8 bytes, control characters)."""
    if value is None or value.strip() == "":
        return None
    if not is_media_type(value):
        raise errors.InvalidHeader(f"{name} is not a valid media type", header=name)
    return value


def safe_header(value: str, fallback: str = "") -> str:
    """For delivery: what a header can carry; unsafe characters become ``_``."""
    cleaned = _UNSAFE.sub("_", value)
    return cleaned if cleaned.strip() else fallback


@functools.lru_cache(maxsize=256)  # on every GET's path, for the few types a store holds
def safe_content_type(value: str) -> str:
    """A stored mimetype as a Content-Type; one that is no media type is served as bytes."""
    return value if is_media_type(value) else FALLBACK_TYPE
