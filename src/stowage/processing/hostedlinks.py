"""Links of the hosted Filestack CDN to a stored file, read as the file they name (an
import keeps handles; nothing is fetched from the hosted service):

    https://cdn.filestackcontent.com/<HANDLE>
    https://cdn.filestackcontent.com/<APIKEY>/<HANDLE>        (filestack-js's Filelink)
    https://cdn.filestackcontent.com/<APIKEY>/resize=w:300/<HANDLE>
    https://cdn.filestackcontent.com/api/file/<HANDLE>

A link's tasks run first, before those of the URL that names it (the link is that
URL's source); its API key is the hosted app's, not this request's, and is dropped."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple
from urllib.parse import quote, unquote

from stowage import errors, words
from stowage.processing import catalogue

_LINK = re.compile(
    r"https?://(?:[a-z0-9-]+\.)*filestackcontent\.com/([^?#]*)(?:\?([^#]*))?(?:#.*)?",
    re.IGNORECASE | re.ASCII,
)
_HANDLE = re.compile(r"[A-Za-z0-9_-]{20}")


class HostedLink(NamedTuple):
    tasks: list[str]  # the link's own task segments, in its order
    handle: str
    #: The link's own query string (``dl=true``), when it came within the path
    #: (percent-encoded); it is read as the request's, as on a handle's URL.
    query: str = ""


def read(url: str) -> HostedLink | None:
    """The tasks and the handle of a hosted CDN link, or None for any other URL (or a
    hosted one whose path names no file)."""
    found = _LINK.fullmatch(url)
    if found is None:
        return None
    segments = [unquote(s) for s in found.group(1).split("/") if s]  # the link's own
    if not segments or not _HANDLE.fullmatch(segments[-1]):
        return None
    *before, handle = segments
    query = found.group(2) or ""
    if [words.folded(s) for s in before] == ["api", "file"]:
        return HostedLink([], handle, query)
    if before and catalogue.names_no_task(before[0]):
        before = before[1:]
    if any(catalogue.names_no_task(s) for s in before):
        return None  # not a link this reads: fetched as any URL is
    return HostedLink(before, handle, query)


def spliced(before: list[str], link: HostedLink) -> list[str]:
    """A CDN path's raw segments up to the link (``before``), with the link's tasks first
    (they make the source) and its handle last; the path's own API key stays in front."""
    before = [s for s in before if s]
    key = before[:1] if before and catalogue.names_no_task(unquote(before[0])) else []
    return [*key, *(quote(t, safe="") for t in link.tasks), *before[len(key) :], link.handle]


def not_a_storage_alias(url: str) -> None:
    """``src://<alias>/<path>``: a hosted storage alias, a bucket named in the hosted
    developer portal, which has no counterpart here (docs/decisions.md)."""
    if url[:4].lower() == "src:":
        raise errors.InvalidUrl(
            "storage aliases (src://<alias>/<path>) are not served here: bring the files "
            "in with `stowage import` (keeping their handles) or make handles for them "
            "with POST /api/store/<PROVIDER>?path=<key>&link=true"
        )


#: ``ftp:`` then an empty segment: ``ftp://host/a.png`` split on ``/`` (a URI scheme,
#: RFC 3986 3.1), or one segment ``ftp://host/a.png`` (sent percent-encoded); no task,
#: key or handle has either shape. ``data:`` starts a data URL.
_SCHEME = re.compile(r"([a-z][a-z0-9+.-]*:)(//.*)?", re.IGNORECASE | re.ASCII | re.DOTALL)


def other_scheme(raw: Sequence[str]) -> str | None:
    """Why a path without an http(s) source is refused when it holds a source URL of a
    scheme that is not fetched (``ftp://``, ``file://``, ``s3://``, ``data:``): the
    client's URL (``INVALID_URL``), not a task; it was ``400 UNSUPPORTED_TASK`` "task
    'ftp:' is not supported". None for a path without one."""
    for at, segment in enumerate(raw):
        text = unquote(segment)
        after = raw[at + 1] if at + 1 < len(raw) else None
        found = _SCHEME.fullmatch(text)
        if found is not None and (found.group(2) or after == ""):
            return f"only http and https urls are fetched, not {found[1]}"
        if text[:5].lower() == "data:":
            return "only http and https urls are fetched, not data:"
    return None
