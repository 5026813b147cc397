"""A request's path as the logs show it. The query string is never logged: policies and
signatures travel there. Transformation URLs carry the same in the path
(``security=p:<policy>,s:<signature>``), and an external source's address, percent-encoded
in the path, may carry another service's credentials in its own query string or its user
part (``https%3A%2F%2Fuser:pw@host%2Fx.jpg%3Ftoken%3D...``). Both are left out in every
form the grammar reads a source in (as sent, one slash after the scheme, percent-encoded,
quoted, in a list), also where filestack-js's base64 form carries them (``b64/<tasks>``,
``b64://<source>``): those parts are shown decoded, or hidden whole when they do not
decode. A task the table does not know (``securty=p:...,s:...``), or a known one given an
option it does not take (``flip=policy:...``), is shown by its name only: it may carry a
policy whatever its name. Control characters are escaped by the log formatter
(``observe/logs.py``), not here."""

from __future__ import annotations

import re
from urllib.parse import unquote

from stowage import errors
from stowage.processing import b64paths, catalogue, grammar

#: Tasks whose options grant access (the hosted service's name for signed URLs).
SECRET_TASKS = frozenset({"security"})
HIDDEN = "[redacted]"


def _sep(*hexes: str) -> str:
    """A separator as it is, or still percent-encoded, once or more (``%2F``, ``%252F``)."""
    return f"%(?:25)*(?:{'|'.join(hexes)})"


_COLON = f"(?::|{_sep('3a')})"
_SLASH = f"(?:[/\\\\]|{_sep('2f', '5c')})"
#: ``scheme://user@``, and ``https:/user@`` or ``https:user@`` (the grammar reads a
#: scheme with one slash; a fetcher may read none or backslashes): up to the last ``@``
#: before the authority ends.
_USER = re.compile(
    rf"(?P<lead>[a-z][a-z0-9+.-]*{_COLON}{_SLASH}{{2}}|(?:https?|src){_COLON}{_SLASH}*)"
    rf"(?:(?![/\\?#]|{_sep('2f', '5c', '3f', '23')}).)*(?:@|{_sep('40')})",
    re.IGNORECASE | re.DOTALL,
)
#: Where a source's query string starts, also still encoded (a source encoded twice).
_QUERY = re.compile(rf"\?|{_sep('3f')}", re.IGNORECASE)


def loggable(raw_path: str) -> str:
    """``raw_path`` (as it came: percent-encoded, the query string dropped) decoded as the
    URL grammar decodes it, with every ``security`` task's options, a source address's
    query string and user part replaced by ``[redacted]``."""
    segments = _decoded(raw_path.partition("?")[0].split("/"))
    path = "/".join(_kept_whole(unquote(segment)) for segment in segments)
    asked = _QUERY.search(path)  # an encoded source's
    head = path[: asked.start()] if asked else path
    # The user part first: ``user:pw=@host`` would read as a task named ``user:pw``.
    head = _USER.sub(rf"\g<lead>{HIDDEN}@", head)
    shown = "/".join(_segment(s) for s in head.split("/"))
    return f"{shown}?{HIDDEN}" if asked else shown


def _kept_whole(segment: str) -> str:
    """A task's decoded segment with its ``/`` encoded again: standard base64's ``/`` in a
    policy, sent as ``%2F``, is no segment boundary to the grammar, and must not become
    one here (the policy's tail and the signature were shown as a segment of their own).
    A source's ``/`` (``https%3A%2F%2Fh%2Fa.jpg``) is kept: the name before its first
    ``=``, if any, holds one."""
    name, has_options, _ = segment.partition("=")
    return segment.replace("/", "%2F") if has_options and "/" not in name else segment


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
    """A task as it came, but ``security``'s options, and those of a task the table does
    not know or that names an option its task does not take."""
    name, has_options, body = segment.partition("=")
    if not has_options:
        return segment
    name = name.strip().lower()
    spec = catalogue.spec(name)
    if name in SECRET_TASKS or spec is None:
        return f"{name}={HIDDEN}"
    items = [item for item in grammar.split(body, ",") if item.strip()]
    if spec.bare and len(items) == 1 and ":" not in items[0]:
        return segment
    keys = [key.strip().lower() for key, sep, _ in (i.partition(":") for i in items) if sep]
    known = len(keys) == len(items) and all(spec.param(key) for key in keys)
    return segment if known else f"{name}={HIDDEN}"
