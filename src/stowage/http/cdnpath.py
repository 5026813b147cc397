"""The CDN URL forms the Filestack SDKs build, parsed into what a download needs.

    /<HANDLE>                                   /<HANDLE>/metadata
    /security=p:<policy>,s:<signature>/<HANDLE>                    (python)
    /<APIKEY>/security=signature:<sig>,policy:<policy>/<HANDLE>    (js; a policy holding
                                                 "/" or "," comes in double quotes)
    /cache=false/<HANDLE>   /cache=expiry:<seconds>/<HANDLE>   and combinations

Segments are split on "/" outside double quotes (also when the quotes are sent as %22),
then percent-decoded. Other tasks (``resize=width:300``, ``flip``) are collected in
``tasks`` for the processing engine, which refuses the ones it does not know. The
source may be an external URL instead of a handle (``/<APIKEY>/<tasks>/https://...``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import unquote

from stowage import booleans, errors
from stowage.processing.tasks import ALIASES, SPECS

_QUOTE = re.compile("%22", re.IGNORECASE)
_URL = re.compile(r"(?:https?|src)(?::|%3A)", re.IGNORECASE)


@dataclass
class CdnPath:
    handle: str
    api_key: str | None = None
    metadata: bool = False
    policy: str | None = None
    signature: str | None = None
    cache: bool | None = None  # None: the default; False: cache=false
    max_age: int | None = None  # cache=expiry:N
    tasks: list[str] = field(default_factory=list)  # processing tasks, left to right
    url: str | None = None  # an external source instead of a handle


def parse(raw_path: str) -> CdnPath:
    raw = _split(_QUOTE.sub('"', raw_path), "/")
    url = _url_source(raw)
    if url is not None:
        raw = raw[: url[1]]
    segments = [unquote(s) for s in raw if s]
    metadata = url is None and len(segments) > 1 and segments[-1] == "metadata"
    if metadata:
        segments.pop()
    if not segments:
        raise errors.NotFound()
    found = CdnPath(handle="" if url else segments.pop(), metadata=metadata)
    found.url = url[0] if url else None
    if segments and "=" not in segments[0] and task_name(segments[0]) not in SPECS:
        found.api_key = segments.pop(0)
    for segment in segments:
        _apply(found, segment)
    return found


def _url_source(raw: list[str]) -> tuple[str, int] | None:
    """An external URL source: the rest of the path from its scheme on, and the segment
    it starts at. Sent as is (``https://host/a.jpg``) or percent-encoded."""
    for index, segment in enumerate(raw[1:], start=1):
        if _URL.match(segment) and "=" not in segment.split(":")[0]:
            rest = "/".join(raw[index:])
            return (unquote(rest) if "://" not in rest else rest), index
    return None


def task_name(segment: str) -> str:
    name = segment.partition("=")[0].lower()
    return ALIASES.get(name, name)


def _apply(found: CdnPath, segment: str) -> None:
    name, _, params = segment.partition("=")
    if name == "security":
        values = _params(params)
        found.policy = values.get("p", values.get("policy"))
        found.signature = values.get("s", values.get("signature"))
    elif name == "cache":
        _cache(found, params)
    else:
        found.tasks.append(segment)


def _cache(found: CdnPath, params: str) -> None:
    if params.strip() == "" or booleans.is_word(params):
        found.cache = booleans.parse(params, "cache", default=True)
        return
    values = _params(params)
    if not booleans.parse(values.get("cache"), "cache", default=True):
        found.cache = False
    expiry = values.get("expiry")
    if expiry is not None:
        if not (expiry.isascii() and expiry.isdigit()) or len(expiry) > 10:  # "³".isdigit()
            raise errors.InvalidParameter("cache expiry must be seconds", parameter="cache")
        found.max_age = int(expiry)


def _params(text: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for item in _split(text, ","):
        key, sep, value = item.partition(":")
        if not sep:
            raise errors.InvalidParameter(f"malformed task parameter {item[:64]!r}")
        values[key.strip()] = value.strip().strip('"')
    return values


def _split(text: str, separator: str) -> list[str]:
    """Split on ``separator`` outside double quotes."""
    parts: list[str] = []
    current: list[str] = []
    quoted = False
    for char in text:
        if char == '"':
            quoted = not quoted
        if char == separator and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts
