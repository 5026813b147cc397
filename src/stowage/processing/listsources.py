"""The sources a CDN path lists, ``[h1,h2]`` or ``["https://a/x.jpg","https://b/y.jpg"]``
(``animate``, ``pdfcreate``, ``zip``): its items read as handles or as URLs.

A URL in a list reaches its origin byte for byte as the same URL alone would: sent as
it is (filestack-js writes a list's URLs as given), its escapes (``%20``, ``%2F``,
``%3F``) are the URL's and are kept; sent percent-encoded whole, it is decoded once.
A quote sent as ``%22`` (as a browser sends ``"``) is a quote only where it opens or
closes an item (``marked_quotes``): within a URL it is the URL's (``/a%22b.png``).
"""

from __future__ import annotations

import re
from urllib.parse import unquote

from stowage import errors
from stowage.core import names
from stowage.processing import hostedlinks
from stowage.processing.base import Value

#: A URL's scheme, as sent or percent-encoded (``https:``, ``https%3A``).
URL = re.compile(r"(?:https?|src)(?::|%3A)", re.IGNORECASE | re.ASCII)

#: A URL as sent in a path: its scheme's ``://`` not percent-encoded.
SENT_URL = re.compile(r"(?:https?|src)://", re.IGNORECASE | re.ASCII)
#: Blanks before a list's item, as sent (``["https://h/a.jpg",%20"https://h/b.jpg"]``),
#: and after a quoted one.
_LEADING_BLANK = re.compile(r"^(?:[ \t]|%(?:20|09))+", re.IGNORECASE)
_TRAILING_BLANK = re.compile(r'(?<=")(?:[ \t]|%(?:20|09))+$', re.IGNORECASE)


_LIST_START = re.compile(r"/(?:\[|%5B)", re.IGNORECASE)


def opening(path: str) -> re.Match[str] | None:
    """Where a list source opens in a path (``/[`` or ``/%5B``): the first such with no
    URL before it. A bracket within a URL is that URL's (``https://h/a/%5Bx%5D``, and
    ``/%5B`` in a listed URL's path)."""
    opened = _LIST_START.search(path)
    if opened is None or URL.search(path, 0, opened.start()) is not None:
        return None
    return opened


_QUOTE_OR_BLANK = re.compile(r'"|%22|[ \t]|%20|%09|,|.', re.DOTALL)  # digits: no case
_CLOSES = re.compile(r"(?:[ \t]|%20|%09)*(?:,|$)")


def marked_quotes(inner: str) -> str:
    """A list's text between its brackets, as sent, with the quotes that open and close
    its items as ``"`` and every other quote, ``"`` or ``%22``, as ``%22``: an item's
    quote is its first character after blanks, and its closing one the last before the
    blanks and comma (or end) that follow it. A URL's own ``%22`` (``/a%22b.png``,
    ``/a%22.png`` at an item's end unquoted) is the URL's."""
    out: list[str] = []
    state = "start"  # at an item's start; "plain", "quoted": in one; "closed": after it
    for token in _QUOTE_OR_BLANK.finditer(inner):
        text = token[0]
        quote, blank = text in ('"', "%22"), text in (" ", "\t", "%20", "%09")
        if text == "," and state != "quoted":
            state = "start"
        elif state == "start" and quote:
            state, text = "quoted", '"'
        elif state == "start" and not blank:
            state = "plain"
        elif state == "quoted" and quote and _CLOSES.match(inner, token.end()):
            state, text = "closed", '"'
        elif quote:
            text = "%22"
        out.append(text)
    return "".join(out)


def listed(items: Value, *, as_sent: bool) -> Value:
    """A list's items, blanks sent as ``%20`` around them taken off (and the quotes
    they hid). Read ``as_sent``, each URL is kept as it came, as a URL source alone is
    (``grammar._url_source``), and any other item (a handle, a URL sent percent-encoded
    whole) is decoded once, as the list would have been. The quotes of items sent as
    ``%22`` are quotes already (``grammar._segments``, ``marked_quotes``)."""
    if not isinstance(items, tuple):
        return items
    read: list[Value] = []
    for item in items:
        if not isinstance(item, str):
            read.append(item)
            continue
        text = _TRAILING_BLANK.sub("", _LEADING_BLANK.sub("", item))
        if text != item and len(text) >= 2 and text[0] == text[-1] == '"':
            text = text[1:-1]
        sent = not as_sent or SENT_URL.match(text)
        read.append(bracketed_host(text) if sent else unquote(text))
    return tuple(read)


def _list_item(item: Value) -> tuple[str, bool]:
    """A list's item: a handle (a Filestack CDN link's too), or a URL; (it, is a handle)."""
    text = str(item) if isinstance(item, str) else ""
    if names.is_handle(text):
        return text, True
    if URL.match(text) and "://" in text:
        hostedlinks.not_a_storage_alias(text)
        hosted = hostedlinks.read(text)
        if hosted and hosted.tasks:
            raise errors.InvalidParameter(
                "a listed hosted link holds no tasks: list its handle", parameter="sources"
            )
        return (hosted.handle, True) if hosted else (text, False)
    raise errors.InvalidParameter(
        "a list of sources holds handles (20 letters, digits, '_' or '-') or URLs",
        parameter="sources",
    )


def kinds(items: tuple[Value, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(handles, URLs): a list holds one kind or the other; an item that cannot be a
    handle (``[h,]``, ``[,]``, a path) is the list's mistake, no 404."""
    read = [_list_item(item) for item in items]
    if all(is_handle for _, is_handle in read):
        return tuple(item for item, _ in read), ()
    if not any(is_handle for _, is_handle in read):
        return (), tuple(item for item, _ in read)
    raise errors.InvalidParameter(
        "a list of sources holds handles (20 letters, digits, '_' or '-') or URLs "
        "(http or https), not both",
        parameter="sources",
    )


def bracketed_host(url: str) -> str:
    """An IPv6 host's brackets, as clients encode them in a path (``%5B::1%5D``), back."""
    scheme, sep, rest = url.partition("://")
    authority, slash, tail = rest.partition("/")
    user, at, host = authority.rpartition("@")
    if not sep or not host.upper().startswith("%5B"):
        return url
    plain = re.sub(r"^%5[bB](.*?)%5[dD]", lambda m: "[" + unquote(m[1]) + "]", host)
    return f"{scheme}{sep}{user}{at}{plain}{slash}{tail}"
