"""Turning an aiohttp request into what the core takes: credentials, flags, a Source."""

from __future__ import annotations

import base64
import binascii
import dataclasses
from collections.abc import AsyncIterator
from urllib.parse import parse_qs

import aiohttp
from aiohttp import web
from aiohttp.web_protocol import RequestPayloadError

from stowage import booleans, errors
from stowage.config import Settings
from stowage.core import headersafe, streams
from stowage.core.security import Credentials
from stowage.core.sources import Source
from stowage.http import bodies, strict, uploadform

CHUNK = 256 * 1024
FORM_PEEK = 16 * 1024


def flag(request: web.Request, name: str, *, default: bool = False) -> bool:
    return booleans.parse(request.query.get(name), name, default=default)


def credentials(request: web.Request) -> Credentials:
    """The query's policy and signature (each at most once: a second one would go
    unchecked) and the Authorization header."""
    for name in ("policy", "signature"):
        if len(request.query.getall(name, ())) > 1:
            raise errors.InvalidParameter(f"{name} is sent once", parameter=name)
    policy = _token(request.query.get("policy"))
    signature = _token(request.query.get("signature"))
    header = request.headers.get("Authorization")
    if header is None:
        return Credentials(policy=policy, signature=signature)
    basic = _basic(header)
    if basic is None:  # judged by the core: a 401 only where credentials are required
        problem = "Authorization must be HTTP Basic app:<secret>"
        return Credentials(policy=policy, signature=signature, basic_problem=problem)
    user, secret = basic
    return Credentials(policy=policy, signature=signature, basic_user=user, basic_secret=secret)


def with_pair(creds: Credentials, policy: str | None, signature: str | None) -> Credentials:
    """``creds`` with the policy and signature sent elsewhere than the query (a path's
    ``security`` task, an upload's form fields). A query pair beside them must be the
    same pair: one of two that differ would go unchecked (docs/decisions.md)."""
    policy, signature = _token(policy), _token(signature)
    if policy is None and signature is None:
        return creds
    if (creds.policy, creds.signature) not in ((None, None), (policy, signature)):
        raise errors.InvalidParameter(
            "the policy and signature are sent once (the query's differ from the others)",
            parameter="policy",
        )
    return dataclasses.replace(creds, policy=policy, signature=signature)


def _token(value: str | None) -> str | None:
    """A policy (base64) or signature (hex) as sent: neither ever holds a space, so one
    is a raw ``+`` of standard base64 that a query or a form read as a space."""
    return None if value is None else value.replace(" ", "+")


def _basic(header: str) -> tuple[str, str] | None:
    scheme, _, value = header.strip().partition(" ")
    try:
        if scheme.lower() != "basic":
            return None
        user, sep, secret = base64.b64decode(value.strip(), validate=True).decode().partition(":")
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return None
    return (user, secret) if sep else None


async def body_chunks(
    request: web.Request, settings: Settings, *, encoded: bool = False
) -> AsyncIterator[bytes]:
    """The body's bytes. ``max_upload_bytes`` bounds the stored bytes (the core counts them
    after any decoding), so Content-Length refuses early only when the body is stored as
    sent; a base64 or Content-Encoding body is bounded by a looser raw cap instead, the
    same with Content-Length or chunked."""
    limit = settings.max_upload_bytes
    if encoded or request.headers.get("Content-Encoding", "identity").lower() != "identity":
        limit = _raw_cap(limit)
    length = request.content_length
    if length is not None and length > limit:
        raise errors.PayloadTooLarge(limit=settings.max_upload_bytes)
    chunks = streams.idle_timeout(_read_body(request), settings.body_idle_timeout)
    return streams.limited(chunks, limit, "the body is larger than allowed")


def _raw_cap(limit: int) -> int:
    return limit * 2 + 64 * 1024  # base64 is 4/3 of the bytes, plus line breaks


async def _read_body(request: web.Request) -> AsyncIterator[bytes]:
    try:
        async for chunk in bodies.pieces(request.content):
            yield chunk
    except RequestPayloadError as exc:  # gzip that is not gzip, a bad chunk size
        raise strict.body_error(exc) from exc
    except (aiohttp.ClientPayloadError, ConnectionError) as exc:
        raise errors.BadRequest("the request body broke off") from exc


async def source(request: web.Request, settings: Settings, *, encoded: bool = False) -> Source:
    """A store/overwrite body: multipart ``fileUpload``, a form ``url``, or raw bytes; or
    ``?url=`` with no body, read as the form's (it stored an empty file)."""
    queried = request.query.get("url")
    if queried is not None:
        if request.body_exists:
            raise errors.InvalidParameter(
                "a url in the query and a body: send the file or its url, not both",
                parameter="url",
            )
        return Source(url=queried)
    ctype = request.content_type
    if ctype.startswith("multipart/"):
        return await _multipart(request, settings)
    chunks = await body_chunks(request, settings, encoded=encoded)
    declared = headersafe.declared_header(request.headers.get("Content-Type"))
    if ctype == "application/x-www-form-urlencoded":
        head, chunks = await streams.peek(chunks, FORM_PEEK + 1)
        url = _form_url(head) if len(head) <= FORM_PEEK else None
        if url is not None:
            return Source(url=url)
        declared = None  # curl's default type for --data-binary says nothing about the bytes
    return Source(chunks=chunks, content_type=declared, raw=True)


def _form_url(body: bytes) -> str | None:
    try:
        form = parse_qs(body.decode("utf-8"), keep_blank_values=True, strict_parsing=True)
    except (UnicodeDecodeError, ValueError):
        return None
    values = form.get("url")
    if values is None or len(values) != 1 or set(form) - {"url"}:
        return None
    return values[0]


async def _multipart(request: web.Request, settings: Settings) -> Source:
    return await uploadform.source(request, settings, _read_body(request))


def flag_value(request: web.Request, name: str) -> bool:
    """Like ``flag`` but never raises: metadata ignores selectors it cannot read."""
    return booleans.lenient(request.query.get(name))
