"""Client text, decoded strictly in one place: the request's path, its headers, JSON
bodies, form fields.

aiohttp decodes header bytes as UTF-8 with ``surrogateescape``, so invalid bytes become
lone surrogates that fail later, when the value is stored or logged (a 500). JSON can carry
``"\\udcff"`` escapes with the same effect, and 100,000 nested ``[`` overflow the parser's
recursion. A path that, percent-decoded, holds a control character (``%0A``, ``%00``)
names no handle, task or route. All of these are a client's mistake: a 400 here, before
any handler runs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote

import aiohttp
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.typedefs import Handler
from aiohttp.web_protocol import RequestPayloadError

from stowage import errors, jsonkeys

MAX_DEPTH = 32  # no request body of the API nests deeper than a few levels
#: C0, DEL and C1: what no handle, task, route or storage path holds.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def is_clean_text(value: str) -> bool:
    """No lone surrogate (invalid UTF-8 after surrogateescape, or a JSON escape)."""
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_headers(headers: Mapping[str, str]) -> None:
    for name, value in headers.items():
        if not (is_clean_text(name) and is_clean_text(value)):
            safe_name = name if is_clean_text(name) else "?"
            raise errors.InvalidHeader(f"header {safe_name} is not valid UTF-8", header=safe_name)


def check_path(raw_path: str) -> None:
    """``raw_path`` (its query string dropped) decoded once, as the routes and the URL
    grammar read it, holds no control character."""
    found = _CONTROL.search(unquote(raw_path.partition("?")[0], errors="replace"))
    if found:
        raise errors.InvalidRequestPath(character=f"0x{ord(found[0]):02x}")


@web.middleware
async def strict_request_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    check_path(request.raw_path)
    check_headers(request.headers)
    return await handler(request)


def body_error(exc: BaseException) -> errors.StowageError:
    """A body aiohttp could not decode: its Content-Encoding, or its chunked framing."""
    if "content-encoding" in str(exc).lower():
        return errors.InvalidEncoding()
    return errors.BadRequest("the request body is malformed (chunked framing)")


async def read_body(request: web.Request) -> bytes:
    """The whole (small, ``client_max_size``-bounded) body, decoded per Content-Encoding."""
    try:
        return await request.read()
    except (RequestPayloadError, aiohttp.ClientPayloadError, HttpProcessingError) as exc:
        raise body_error(exc) from exc


async def read_json(request: web.Request) -> Any:
    raw = await read_body(request)
    try:
        data = jsonkeys.loads(raw.decode("utf-8"))
    except jsonkeys.DuplicateKey as exc:  # one of two values would go unread (unchecked)
        raise errors.InvalidParameter(str(exc), parameter=exc.key) from exc
    except UnicodeDecodeError as exc:
        raise errors.InvalidJson("the body is not UTF-8") from exc
    except RecursionError as exc:
        raise errors.InvalidJson(f"the body nests deeper than {MAX_DEPTH} levels") from exc
    except ValueError as exc:
        raise errors.InvalidJson() from exc
    check_value(data)
    return data


def check_value(data: Any) -> None:
    """Every string (keys too) is clean text; nesting is at most MAX_DEPTH."""
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise errors.InvalidJson(f"the body nests deeper than {MAX_DEPTH} levels")
        if isinstance(value, str):
            _check_string(value)
        elif isinstance(value, dict):
            _check_strings(value.keys())
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)


def _check_strings(values: Iterable[Any]) -> None:
    for value in values:
        if isinstance(value, str):
            _check_string(value)


def _check_string(value: str) -> None:
    if not is_clean_text(value):
        raise errors.InvalidJson("a string holds a lone surrogate (not valid Unicode)")


async def read_form(request: web.Request) -> dict[str, Any]:
    """The form's fields, each sent once: of a repeated field (a second ``policy``) one
    would go unread, and unchecked."""
    try:
        fields = await request.post()
    except (RequestPayloadError, aiohttp.ClientPayloadError, HttpProcessingError) as exc:
        raise body_error(exc) from exc
    except (ValueError, UnicodeDecodeError, AssertionError, RuntimeError) as exc:
        raise errors.BadRequest("the body is not valid form data") from exc
    form = dict(fields)
    for key, value in form.items():
        if len(fields.getall(key)) > 1:
            shown = key[:64] if is_clean_text(key) else "?"
            raise errors.InvalidParameter(f"the field {shown!r} is sent once", parameter=shown)
        _check_string(key)
        if isinstance(value, str):
            _check_string(value)
    return form
