"""Turning an aiohttp request into what the core takes: credentials, flags, a Source."""

from __future__ import annotations

import base64
import binascii
from collections.abc import AsyncIterator
from urllib.parse import parse_qs

import aiohttp
from aiohttp import BodyPartReader, MultipartReader, web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_protocol import RequestPayloadError

from stowage import booleans, errors
from stowage.config import Settings
from stowage.core import headersafe, streams
from stowage.core.security import Credentials
from stowage.core.sources import Source
from stowage.http import strict

CHUNK = 256 * 1024
FORM_PEEK = 16 * 1024


def flag(request: web.Request, name: str, *, default: bool = False) -> bool:
    return booleans.parse(request.query.get(name), name, default=default)


def credentials(request: web.Request) -> Credentials:
    policy = request.query.get("policy")
    signature = request.query.get("signature")
    header = request.headers.get("Authorization")
    if header is None:
        return Credentials(policy=policy, signature=signature)
    user, secret = _basic(header)
    return Credentials(policy=policy, signature=signature, basic_user=user, basic_secret=secret)


def _basic(header: str) -> tuple[str, str]:
    scheme, _, value = header.strip().partition(" ")
    try:
        if scheme.lower() != "basic":
            raise ValueError(scheme)
        user, sep, secret = base64.b64decode(value.strip(), validate=True).decode().partition(":")
        if not sep:
            raise ValueError("no colon")
    except (ValueError, binascii.Error, UnicodeDecodeError) as exc:
        raise errors.InvalidCredentials("Authorization must be HTTP Basic app:<secret>") from exc
    return user, secret


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
        async for chunk in request.content.iter_chunked(CHUNK):
            yield chunk
    except RequestPayloadError as exc:  # gzip that is not gzip, a bad chunk size
        raise strict.body_error(exc) from exc
    except (aiohttp.ClientPayloadError, ConnectionError) as exc:
        raise errors.BadRequest("the request body broke off") from exc


async def source(request: web.Request, settings: Settings, *, encoded: bool = False) -> Source:
    """A store/overwrite body: multipart ``fileUpload``, a form ``url``, or raw bytes."""
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
    try:
        reader = await request.multipart()
        while True:
            part = await reader.next()
            if part is None:
                raise errors.MissingFile("multipart body has no fileUpload part")
            if not isinstance(part, BodyPartReader):
                raise errors.BadRequest("nested multipart bodies are not supported")
            if part.name == "fileUpload":
                return Source(
                    chunks=streams.idle_timeout(
                        _part_chunks(reader, part), settings.body_idle_timeout
                    ),
                    filename=part.filename,
                    content_type=_part_type(part),
                )
            if part.name == "url":
                return Source(url=(await part.read(decode=True))[:FORM_PEEK].decode())
            await part.release()
    except RequestPayloadError as exc:
        raise strict.body_error(exc) from exc
    except (
        ValueError,
        AssertionError,
        RuntimeError,
        UnicodeDecodeError,
        HttpProcessingError,
    ) as exc:
        raise errors.BadRequest("malformed multipart body") from exc


def _part_type(part: BodyPartReader) -> str | None:
    strict.check_headers(part.headers)
    return headersafe.declared_header(part.headers.get("Content-Type"), "the part's Content-Type")


async def _part_chunks(reader: MultipartReader, part: BodyPartReader) -> AsyncIterator[bytes]:
    try:
        while chunk := await part.read_chunk(CHUNK):
            yield chunk
        # A second file would be silently dropped: refuse before the write is published.
        while (extra := await reader.next()) is not None:
            if getattr(extra, "name", None) == "fileUpload":
                raise errors.BadRequest("multipart body has more than one fileUpload part")
            await extra.release()
    except RequestPayloadError as exc:
        raise strict.body_error(exc) from exc
    except (aiohttp.ClientPayloadError, ConnectionError) as exc:
        raise errors.BadRequest("the request body broke off") from exc
    except (ValueError, AssertionError, RuntimeError, HttpProcessingError) as exc:
        raise errors.BadRequest("malformed multipart body") from exc


def flag_value(request: web.Request, name: str) -> bool:
    """Like ``flag`` but never raises: metadata ignores selectors it cannot read."""
    return booleans.lenient(request.query.get(name))
