"""A store's ``multipart/form-data`` body (a ``fileUpload`` part, or a ``url`` part) as
the core's Source, read with the streaming parser of ``formparts``."""

from __future__ import annotations

from collections.abc import AsyncIterator

from aiohttp import web
from aiohttp.helpers import parse_mimetype

from stowage import errors
from stowage.config import Settings
from stowage.core import headersafe, streams
from stowage.core.sources import Source
from stowage.http import strict
from stowage.http.formparts import FormParts, Part

URL_LIMIT = 16 * 1024


async def source(request: web.Request, settings: Settings, pieces: AsyncIterator[bytes]) -> Source:
    """``pieces`` is the raw body (its transport errors already mapped)."""
    boundary = parse_mimetype(request.headers.get("Content-Type", "")).parameters.get("boundary")
    form = FormParts(streams.idle_timeout(pieces, settings.body_idle_timeout), boundary or "")
    try:
        while True:
            part = await form.next_part()
            if part is None:
                raise errors.MissingFile("multipart body has no fileUpload part")
            if part.nested:
                raise errors.BadRequest("nested multipart bodies are not supported")
            if part.name == "fileUpload":
                return Source(
                    chunks=_file_bytes(form),
                    filename=part.filename,
                    content_type=_part_type(part),
                )
            if part.name == "url":
                return Source(url=(await form.read(URL_LIMIT)).decode())
            await form.skip()
    except (ValueError, LookupError, UnicodeDecodeError) as exc:
        raise errors.BadRequest("malformed multipart body") from exc


def _part_type(part: Part) -> str | None:
    strict.check_headers(part.headers)
    return headersafe.declared_header(part.headers.get("Content-Type"), "the part's Content-Type")


async def _file_bytes(form: FormParts) -> AsyncIterator[bytes]:
    async for chunk in form.body():
        yield chunk
    # A second file would be silently dropped: refuse before the write is published.
    try:
        while (extra := await form.next_part()) is not None:
            if extra.name == "fileUpload":
                raise errors.BadRequest("multipart body has more than one fileUpload part")
            await form.skip()
    except (ValueError, LookupError, UnicodeDecodeError) as exc:
        raise errors.BadRequest("malformed multipart body") from exc
