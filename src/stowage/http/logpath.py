"""A request's path as the logs show it. The query string is never logged: policies and
signatures travel there. Transformation URLs carry the same in the path
(``security=p:<policy>,s:<signature>``), and an external source's address, percent-encoded
in the path, may carry another service's credentials in its own query string or its user
part (``https%3A%2F%2Fuser:pw@host%2Fx.jpg%3Ftoken%3D...``). Both are left out."""

from __future__ import annotations

#: Tasks whose options grant access (the hosted service's name for signed URLs).
SECRET_TASKS = frozenset({"security"})
HIDDEN = "[redacted]"


def loggable(path: str) -> str:
    """``path`` (decoded, as aiohttp gives it) with every ``security`` task's options,
    a source address's query string and user part replaced by ``[redacted]``."""
    head, asked, _ = path.partition("?")  # only an encoded source's: the request's is gone
    segments = [_segment(s) for s in head.split("/")]
    shown = _without_user("/".join(segments))
    return f"{shown}?{HIDDEN}" if asked else shown


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
