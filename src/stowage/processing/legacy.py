"""The File API's first conversion address, as saved URLs still hold it:

    GET /api/file/<HANDLE>/convert?w=200&h=150&fit=crop&align=faces&format=png

filepicker.io served it, and Filestack's older SDKs built it (filestack-rails'
``filepicker_image_url`` until 2017: ``w h fit align rotate crop format quality
watermark watersize waterposition crop_first cache compress`` and the policy). Its query
is read here as the chain of today's tasks that does the same, which the grammar then
checks like any chain: so every range and limit is the task table's.

- ``w``/``h``/``fit``/``align``: ``resize`` (``fit`` and ``align`` need a side);
- ``crop=x,y,w,h``: ``crop``, after the resize unless ``crop_first=true``;
- ``rotate`` (degrees, modulo 360, or ``exif``), ``filter=blur|sharpen`` (``blurAmount``,
  ``sharpenAmount``), ``watermark`` (a file URL whose last part is a handle;
  ``watersize``, ``waterposition``), ``compress``;
- ``format``/``quality``: ``output``;
- ``cache``, ``dl``, ``key``, ``policy``, ``signature``: read from the query by the
  transformation itself, as for any chain;
- a POST stores the result as a new file (``store``: ``location``, ``path``,
  ``container``, ``access``, ``filename``), as the old API did.

A parameter outside this list is refused with the list: a URL must not quietly lose a
part of what it asked for.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from urllib.parse import quote

from stowage import errors, words
from stowage.core import names
from stowage.processing import hostedlinks
from stowage.processing.params import NUMBER_TEXT, half_up

#: Read from the query by the transformation itself, not made into tasks.
PASSED = ("cache", "dl", "key", "policy", "signature")
#: A number as the chain reads one (``100``, ``0100``, ``100.0``, ``1e2``): its range is
#: the task's.
_NUMBER = re.compile(rf"^\+?0*{NUMBER_TEXT}$")
_WORD = re.compile(r"^[a-z]{1,12}$")
_NAME = re.compile(r"^[a-z][a-z0-9]{0,11}$")
_WORDS = re.compile(r"^[a-z]{1,12}(?:,[a-z]{1,12})?$")
_ROTATION = re.compile(rf"^(?:[-+]?0*{NUMBER_TEXT}|exif)$")
_BOX = re.compile(rf"^\+?0*{NUMBER_TEXT}(?:,\+?0*{NUMBER_TEXT}){{3}}$")
#: A store path, container or filename: quoted in the store task, so no quote in it.
_STORE_TEXT = re.compile(r'^[^"\x00-\x1f]{1,1000}$')
#: A stored file's link: the File API's (``/api/file/<H>``, on any host: the file is
#: this service's own, never fetched), or a CDN path here (a hosted CDN link: hostedlinks).
_FILE_LINK = re.compile(
    r"(?:https?://[^/?#]+)?/api/file/([A-Za-z0-9_-]{20})/?(?:\?.*)?"
    r"|/([A-Za-z0-9_-]{20})/?",
    re.IGNORECASE | re.ASCII,
)


def chain_of(query: Mapping[str, str], *, storing: bool = False) -> list[str]:
    """The task segments that do what ``query`` asks (empty: the file as it is), in the
    old API's own order whatever the query's: resize, crop, watermark, filter, then
    rotate, compression and format. ``storing``: a POST, whose result is stored with
    the query's ``location``, ``path``, ``container``, ``access`` and ``filename``."""
    known = NAMES + STORE_NAMES if storing else NAMES
    unknown = sorted(set(query) - set(known))
    if unknown:
        raise errors.InvalidParameter(
            f"convert: parameter {unknown[0]!r} is not one of {', '.join(known)}",
            parameter=unknown[0],
        )
    given = {name: _checked(name, value) for name, value in query.items() if name in _CHECKS}
    sized = _resize(given)
    cut = f"crop=dim:[{given['crop']}]" if "crop" in given else None
    steps = [cut, sized] if given.get("crop_first") == "true" else [sized, cut]
    steps += [
        _watermark(given),
        _filter(given),
        _rotate(given),
        "compress" if given.get("compress") == "true" else None,
        _output(given),
        _store(given) if storing else None,
    ]
    return [step for step in steps if step is not None]


def _checked(name: str, value: str) -> str:
    check = _CHECKS[name]
    found = check(words.trimmed(value) if name in _AS_SENT else words.word(value))
    if found is None:
        raise errors.InvalidParameter(
            f"convert: {name}={value[:60]!r} is not valid", parameter=name
        )
    return found


_AS_SENT = {"watermark", "path", "container", "filename"}


def _matching(pattern: re.Pattern[str]) -> Callable[[str], str | None]:
    return lambda value: value if pattern.match(value) else None


def _flag(value: str) -> str | None:
    return value if value in ("true", "false") else None


def _handle_of(url: str) -> str | None:
    """A watermark is a file's URL (``.../api/file/<H>``, a CDN link) or a handle."""
    if names.is_handle(url):
        return url
    hosted = hostedlinks.read(url)  # the hosted CDN's link of a file, its key too
    if hosted is not None and not hosted.tasks:
        return hosted.handle
    found = _FILE_LINK.fullmatch(url)  # not any site's 20-character last part
    return next((group for group in found.groups() if group), None) if found else None


_CHECKS: dict[str, Callable[[str], str | None]] = {
    "w": _matching(_NUMBER),
    "h": _matching(_NUMBER),
    "fit": _matching(_WORD),
    "align": _matching(_WORDS),
    "crop": _matching(_BOX),
    "crop_first": _flag,
    "rotate": _matching(_ROTATION),
    "filter": _matching(_WORD),
    "blurAmount": _matching(_NUMBER),
    "sharpenAmount": _matching(_NUMBER),
    "watermark": _handle_of,
    "watersize": _matching(_NUMBER),
    "waterposition": _matching(_WORDS),
    "compress": _flag,
    "format": _matching(_WORD),
    "quality": _matching(_NUMBER),
}
#: Where a POST stores its result (the old API's storage parameters).
STORE_NAMES = ("location", "path", "container", "access", "filename")
_CHECKS |= {
    "location": _matching(_NAME),
    "path": _matching(_STORE_TEXT),
    "container": _matching(_STORE_TEXT),
    "access": _matching(_WORD),
    "filename": _matching(_STORE_TEXT),
}
#: Every parameter of a GET, in the order the documentation lists them.
NAMES: tuple[str, ...] = tuple(n for n in (*_CHECKS, *PASSED) if n not in STORE_NAMES)


def _resize(given: dict[str, str]) -> str | None:
    sides = (("w", "width"), ("h", "height"))
    options = [f"{name}:{given[short]}" for short, name in sides if short in given]
    if not options:
        return None  # fit and align alone resize nothing, as before
    for name in ("fit", "align"):
        if name in given:
            options.append(f"{name}:{_listed(given[name])}")
    return "resize=" + ",".join(options)


def _rotate(given: dict[str, str]) -> str | None:
    """Degrees clockwise; any number is rounded half up and taken modulo 360 (-90 is
    270, 90.0 is 90)."""
    deg = given.get("rotate")
    if deg is None:
        return None
    return f"rotate=deg:{deg if deg == 'exif' else half_up(0, deg) % 360}"


def _filter(given: dict[str, str]) -> str | None:
    kind = given.get("filter")
    if kind is None:
        return None
    if kind not in ("blur", "sharpen"):
        raise errors.InvalidParameter("convert: filter is blur or sharpen", parameter="filter")
    amount = given.get(f"{kind}Amount")
    return kind if amount is None else f"{kind}=amount:{amount}"


def _watermark(given: dict[str, str]) -> str | None:
    if "watermark" not in given:
        return None
    options = [f"file:{given['watermark']}"]
    if "watersize" in given:
        options.append(f"size:{given['watersize']}")
    if "waterposition" in given:
        options.append(f"position:{_listed(given['waterposition'])}")
    return "watermark=" + ",".join(options)


def _output(given: dict[str, str]) -> str | None:
    options = [f"{name}:{given[name]}" for name in ("format", "quality") if name in given]
    return "output=" + ",".join(options) if options else None


def _store(given: dict[str, str]) -> str:
    # Percent-encoded: the grammar decodes each segment (a name may hold ``%``).
    options = [f'{name}:"{quote(given[name], safe="/ ")}"' for name in STORE_NAMES if name in given]
    return "store=" + ",".join(options) if options else "store"


def _listed(value: str) -> str:
    return f"[{value}]" if "," in value else value
