"""filestack-js's base64 form of a transformation URL (``client.transform(source,
options, true)``, ``Filelink.setBase64(true)``)::

    /<APIKEY>/b64/<base64 of the tasks' JSON>/b64://<base64 of the source>
    /b64://<base64 of "[h1,h2]">

The tasks' JSON is the SDK's list of ``{"name": ..., "params": {...}}``; the base64 is
standard (its ``/``, ``+`` and ``=`` percent-encoded) or URL-safe (``-`` and ``_``), with
or without padding. Both parts are turned
back into the segments of the plain form here, before the URL grammar reads the path,
so that every rule of the plain form applies to them unchanged.
"""

from __future__ import annotations

import base64
import binascii
import decimal
import json
import math
import re
from typing import Any
from urllib.parse import unquote

from stowage import errors, jsonkeys

MARK = "b64"
SOURCE_MARK = "b64:"
MAX_TASKS = 64
#: A task's name and an option's key: as every name of the task table is spelled. Any other
#: character would be read by the grammar (``resize=width:100`` as a name carries its own
#: options, ``{"width:100,height": 50}`` is two options), not as the JSON's one name.
_NAME = re.compile(r"[A-Za-z0-9_]{1,64}")
_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-+")


def expanded(raw: list[str]) -> list[str]:
    """``raw`` (a path split on ``/``) with its base64 parts as plain segments."""
    if MARK not in raw and SOURCE_MARK not in raw:
        return raw
    found: list[str] = []
    at = 0
    while at < len(raw):
        segment = raw[at]
        if segment == SOURCE_MARK and not any(raw[at + 1 :]):
            raise _bad("the source after b64:// is empty")
        if segment == SOURCE_MARK and at + 2 < len(raw) and raw[at + 1] == "":
            found.append(_source(_decoded(raw[at + 2], "source")))
            at += 3
        elif segment == MARK and at + 1 < len(raw):
            found.extend(_tasks(_decoded(raw[at + 1], "tasks")))
            at += 2
        else:
            found.append(segment)
            at += 1
    return found


def _decoded(text: str, part: str) -> str:
    # Standard base64's ``/``, ``+`` and ``=`` may come percent-encoded (a hand-made URL).
    data = unquote(text).replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(data + "=" * (-len(data) % 4), validate=True).decode("utf-8")
    except (binascii.Error, ValueError) as exc:
        raise _bad(f"the {part} after b64 is not base64 of UTF-8 text") from exc


def _source(text: str) -> str:
    """A handle, a list ``[h1,h2]``, or a URL, in double quotes as the plain form takes a
    URL holding ``/`` (and as it is: a quoted URL is not percent-decoded)."""
    if text.startswith("[") or all(c in _PLAIN for c in text):
        return _escaped(text)
    if '"' in text:
        raise _bad("a source in base64 holds no double quote")
    return f'"{text}"'


def _tasks(text: str) -> list[str]:
    try:
        tasks = jsonkeys.loads(text)  # a params key twice: one value would go unread
    except jsonkeys.DuplicateKey as exc:
        raise _bad(f"the tasks after b64: {exc}") from exc
    except ValueError as exc:
        raise _bad("the tasks after b64 are not JSON") from exc
    if not isinstance(tasks, list) or len(tasks) > MAX_TASKS:
        raise _bad(f"the tasks after b64 are a JSON list of at most {MAX_TASKS}")
    return [segment for task in tasks if (segment := _task(task)) is not None]


def _task(task: Any) -> str | None:
    """``{"name": "resize", "params": {"width": 100}}`` as ``resize=width:100``; params
    true or absent: the bare name; ``cache`` with params false: ``cache=false`` (the
    SDK drops any other task whose params are false)."""
    if not isinstance(task, dict) or not isinstance(task.get("name"), str):
        raise _bad('each task after b64 is {"name": ..., "params": ...}')
    name, params = _named(task["name"], "task name"), task.get("params")
    if params is None or params is True:
        return _escaped(name)
    if params is False:
        return "cache=false" if name == "cache" else None
    if not isinstance(params, dict):
        raise _bad(f"the params of {name[:64]!r} after b64 are not an object")
    options = ",".join(f"{_named(key, 'key')}:{_value(value)}" for key, value in params.items())
    return _escaped(f"{name}={options}")


def _named(text: str, what: str) -> str:
    if not _NAME.fullmatch(text):
        raise _bad(f"a {what} after b64 is 1 to 64 letters, digits and _, not {text[:64]!r}")
    return text


def _value(value: Any, depth: int = 0) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return _number(value)
    if isinstance(value, list) and depth < 3:
        return "[" + ",".join(_value(item, depth + 1) for item in value) + "]"
    if isinstance(value, str) and '"' not in value:
        return value if all(c in _PLAIN for c in value) else f'"{value}"'
    raise _bad("a value after b64 is a number, a boolean, text without double quotes or a list")


def _number(value: float) -> str:
    """As JavaScript's ``String(number)`` writes it (ECMA-262 Number::toString), which is
    how the SDK writes the same option in the plain form: the shortest digits, in fixed
    notation from 1e-6 up to 1e21 (Python's ``repr`` turns to exponents below 1e-4), so
    both forms read as the same text, refusals included."""
    if isinstance(value, int) or not math.isfinite(value):
        return json.dumps(value)
    if value == 0:
        return "0"
    _, digits, exponent = decimal.Decimal(repr(abs(value))).normalize().as_tuple()
    assert isinstance(exponent, int)
    text, k = "".join(map(str, digits)), len(digits)
    n = exponent + k  # the value is 0.<text> x 10^n
    if k <= n <= 21:
        written = text + "0" * (n - k)
    elif 0 < n <= 21:
        written = f"{text[:n]}.{text[n:]}"
    elif -6 < n <= 0:
        written = "0." + "0" * -n + text
    else:
        written = text[0] + (f".{text[1:]}" if k > 1 else "") + f"e{n - 1:+d}"
    return ("-" if value < 0 else "") + written


def _escaped(segment: str) -> str:
    """As it would come in a URL: the grammar percent-decodes each segment once."""
    return segment.replace("%", "%25")


def _bad(reason: str) -> errors.InvalidParameter:
    return errors.InvalidParameter(reason, parameter="b64")
