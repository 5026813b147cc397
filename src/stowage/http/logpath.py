"""A request's path as the logs show it. The query string is never logged: policies and
signatures travel there. Transformation URLs carry the same in the path
(``security=p:<policy>,s:<signature>``), and an external source's address, percent-encoded
in the path, may carry another service's credentials in its own query string or its user
part (``https%3A%2F%2Fuser:pw@host%2Fx.jpg%3Ftoken%3D...``). Both are left out, also where
filestack-js's base64 form carries them (``b64/<tasks>``, ``b64://<source>``): those parts
are shown decoded, or hidden whole when they do not decode."""

from __future__ import annotations

from urllib.parse import unquote

from stowage import errors
from stowage.processing import b64paths

#: Tasks whose options grant access (the hosted service's name for signed URLs).
SECRET_TASKS = frozenset({"security"})
HIDDEN = "[redacted]"


def loggable(raw_path: str) -> str:
    """``raw_path`` (as it came: percent-encoded, the query string dropped) decoded as the
    URL grammar decodes it, with every ``security`` task's options, a source address's
    query string and user part replaced by ``[redacted]``."""
    segments = _decoded(raw_path.partition("?")[0].split("/"))
    path = "/".join(unquote(segment) for segment in segments)
    head, asked, _ = path.partition("?")  # an encoded source's
    segments = [_segment(s) for s in head.split("/")]
    shown = _without_user("/".join(segments))
    return f"{shown}?{HIDDEN}" if asked else shown


def _decoded(segments: list[str]) -> list[str]:
    """The base64 parts as the plain segments they stand for. What follows one that does
    not decode is hidden (it may hold a policy or a token all the same), as is all after a
    source split by a literal ``/`` (the source is last: its pieces could each decode)."""
    marks = (b64paths.MARK, b64paths.SOURCE_MARK)
    first = next((n for n, segment in enumerate(segments) if segment in marks), None)
    if first is None:
        return segments
    source = segments.index(b64paths.SOURCE_MARK) if b64paths.SOURCE_MARK in segments else -1
    try:
        if source < 0 or source + 3 == len(segments):
            return b64paths.expanded(segments)
    except errors.StowageError:
        pass
    return [*segments[: first + 1], HIDDEN]


def _segment(segment: str) -> str:
    name, has_options, _ = segment.partition("=")
    name = name.strip().lower()
    return f"{name}={HIDDEN}" if has_options and name in SECRET_TASKS else segment


def _without_user(path: str) -> str:
    """Each ``scheme://user:password@host`` as ``scheme://[redacted]@host``."""
    parts = path.split("://")
    for n, part in enumerate(parts[1:], start=1):
        authority, slash, rest = part.partition("/")
        if "@" in authority:
            parts[n] = HIDDEN + authority[authority.rindex("@") :] + slash + rest
    return "://".join(parts)
