"""The CDN URL forms the Filestack SDKs build, parsed into what a download needs.

    /<HANDLE>                                   /<HANDLE>/metadata
    /security=p:<policy>,s:<signature>/<HANDLE>                    (python)
    /<APIKEY>/security=signature:<sig>,policy:<policy>/<HANDLE>    (js; a policy holding
                                                 "/" or "," comes in double quotes)
    /cache=false/<HANDLE>   /cache=expiry:<seconds>/<HANDLE>   and combinations

Segments are split on "/" outside double quotes (also when the quotes are sent as %22),
then percent-decoded. Tasks other than ``security`` and ``cache`` are refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

from stowage import booleans, errors

_QUOTE = re.compile("%22", re.IGNORECASE)


@dataclass
class CdnPath:
    handle: str
    api_key: str | None = None
    metadata: bool = False
    policy: str | None = None
    signature: str | None = None
    cache: bool | None = None  # None: the default; False: cache=false
    max_age: int | None = None  # cache=expiry:N


def parse(raw_path: str) -> CdnPath:
    segments = [unquote(s) for s in _split(_QUOTE.sub('"', raw_path), "/") if s]
    metadata = len(segments) > 1 and segments[-1] == "metadata"
    if metadata:
        segments.pop()
    if not segments:
        raise errors.NotFound()
    found = CdnPath(handle=segments.pop(), metadata=metadata)
    if segments and "=" not in segments[0]:
        found.api_key = segments.pop(0)
    for segment in segments:
        _apply(found, segment)
    return found


def _apply(found: CdnPath, segment: str) -> None:
    name, _, params = segment.partition("=")
    if name == "security":
        values = _params(params)
        found.policy = values.get("p", values.get("policy"))
        found.signature = values.get("s", values.get("signature"))
    elif name == "cache":
        _cache(found, params)
    else:
        raise errors.TaskNotSupported(
            f"CDN task {name!r} is not supported; only security and cache", task=name[:64]
        )


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
