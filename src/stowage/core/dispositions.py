"""A fetched file's name, from the origin's ``Content-Disposition`` or its URL.

The first of these that gives a usable name wins: ``filename*`` (RFC 8187: its charset
UTF-8 or ISO-8859-1, its escapes whole, its bytes valid in that charset), then
``filename`` (bytes that are no UTF-8 read as ISO-8859-1), then the URL's last path
part (decoded, bytes that are no UTF-8 dropped), and None when none does (the store's default name).
A name is usable when, cleaned as every stored file's name is (``names.clean_filename``:
its last path part, no control characters, 200 bytes), it has more than an extension:
``filename*=UTF-8''%FF%FE.png`` (no UTF-8) was decoded to two U+FFFD, dropped by the
cleaning, and the file was named ``.png``.
"""

from __future__ import annotations

import re
from urllib.parse import unquote_to_bytes

from stowage.core import names

#: ``; name = value``, the value a token or a quoted string (RFC 6266 section 4.1).
_PARAM = re.compile(
    r';\s*([!#$%&\'*+.^_`|~0-9A-Za-z-]+)\s*=\s*("(?:[^"\\]|\\.)*"?|[^;]*)', re.DOTALL
)
_QUOTED_PAIR = re.compile(r"\\(.)", re.DOTALL)
#: ``charset'language'value``: the value's escapes are whole (``%`` and two hex digits).
_EXTENDED = re.compile(r"([^']*)'[^']*'((?:[^%]|%[0-9A-Fa-f]{2})*)", re.DOTALL)
_CHARSETS = {"utf-8": "utf-8", "iso-8859-1": "latin-1"}
_SURROGATES = re.compile("[\udc80-\udcff]")


def filename(disposition: str | None, raw_path: str) -> str | None:
    """The file's name by the header (``None``: none sent) and the raw path of the URL
    its bytes came from (after redirects), or None."""
    params = _params(disposition or "")
    plain = _latin1(params.get("filename"))
    candidates = (_extended(params.get("filename*")), plain, _last(raw_path))
    for candidate in candidates:
        usable = _usable(candidate)
        if usable is not None:
            return usable
    return None


def _params(disposition: str) -> dict[str, str]:
    """Each parameter's first value, its name lower case, a quoted one unquoted."""
    found: dict[str, str] = {}
    for name, value in _PARAM.findall(disposition):
        value = value.strip()
        if value.startswith('"'):
            value = _QUOTED_PAIR.sub(r"\1", value[1:].removesuffix('"'))
        found.setdefault(name.lower(), value)
    return found


def _extended(value: str | None) -> str | None:
    """``filename*``'s text, or None when its charset is not one of RFC 8187's two, an
    escape is broken or its bytes are not of the charset."""
    read = _EXTENDED.fullmatch(value or "")
    charset = _CHARSETS.get(read[1].strip().lower()) if read else None
    if read is None or charset is None:
        return None
    try:
        return unquote_to_bytes(read[2]).decode(charset)
    except UnicodeDecodeError:
        return None


def _latin1(value: str | None) -> str | None:
    """``filename``'s bytes that are no UTF-8 (which aiohttp keeps as lone surrogates, and
    the cleaning then dropped: ``caf<E9>.png`` was ``caf.png``) read as ISO-8859-1, a
    header's historical charset (RFC 9110 5.5), as browsers read them."""
    if value is None or not _SURROGATES.search(value):
        return value
    return value.encode("utf-8", "surrogateescape").decode("latin-1")


def _last(raw_path: str) -> str | None:
    return url_part(raw_path.rsplit("/", 1)[-1])


def url_part(part: str) -> str | None:
    """A URL path part as a file's name (a source's, a transformation's result's, an
    archive entry's), or None: decoded, bytes that are no UTF-8 dropped, usable as above
    (``/%FF%FE.png`` named a download ``.png``)."""
    return _usable(unquote_to_bytes(part).decode("utf-8", "replace"))


def _usable(name: str | None) -> str | None:
    cleaned = names.clean_filename(name, fallback="")
    stem = cleaned.rpartition(".")[0] if "." in cleaned else cleaned
    return cleaned if stem.strip(". ") else None
