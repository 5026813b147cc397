"""aiohttp's ``FileResponse`` without its two thread hops per response, and small bodies
sent in the same write as the headers.

aiohttp stats and opens the file in the default executor, then closes it there too.
For a 1 KiB download those hand-offs (and the GIL contention of the woken thread)
cost more than the rest of the request (profile in the README's Performance section).
Stowage has already stat'ed the same file on the loop thread a moment before (the
inode is cached), and ``sendfile`` itself runs on the loop thread anyway, so this
does the stat, open and close right there. Everything else, conditionals, ranges and
``sendfile``, is aiohttp's own code. A body of at most ``SMALL_BODY`` bytes is read there
too and leaves with the headers in one ``send``, instead of a ``send`` for the headers, a
``sendfile`` and a writer registration. Relies on ``FileResponse`` internals of aiohttp
3.x (pinned ``<4``); tests/api's download, Range and conditional tests cover it.
"""

from __future__ import annotations

import json
from typing import IO, Any

from aiohttp import hdrs, web
from aiohttp.abc import AbstractStreamWriter
from aiohttp.web_fileresponse import _FileResponseResult

from stowage import errors

SMALL_BODY = 64 * 1024


class LoopFileResponse(web.FileResponse):
    async def prepare(self, request: web.BaseRequest) -> AbstractStreamWriter | None:
        return await prepare_on_loop(self, request)

    async def _sendfile(
        self, request: web.BaseRequest, fobj: IO[Any], offset: int, count: int
    ) -> AbstractStreamWriter:
        if count > SMALL_BODY or self.compression:
            return await super()._sendfile(request, fobj, offset, count)
        fobj.seek(offset)
        body = fobj.read(count)  # page-cached: the file was stat'ed a moment ago
        self._send_headers_immediately = False  # headers go out with the body
        writer = await web.StreamResponse.prepare(self, request)
        assert writer is not None
        await web.StreamResponse.write_eof(self, body)
        return writer


async def prepare_on_loop(
    response: web.FileResponse, request: web.BaseRequest
) -> AbstractStreamWriter | None:
    accept_encoding = request.headers.get(hdrs.ACCEPT_ENCODING, "").lower()
    try:
        result, fobj, st, encoding = response._make_response(request, accept_encoding)
    except PermissionError:
        response.set_status(403)
        return await web.StreamResponse.prepare(response, request)
    except OSError:
        return await _gone(response, request)
    if result is _FileResponseResult.NOT_ACCEPTABLE:
        response.set_status(403)
        return await web.StreamResponse.prepare(response, request)
    if result is _FileResponseResult.PRE_CONDITION_FAILED:
        return await response._precondition_failed(request)
    if result is _FileResponseResult.NOT_MODIFIED:
        etag = f"{st.st_mtime_ns:x}-{st.st_size:x}"
        return await response._not_modified(request, etag, st.st_mtime)
    assert fobj is not None
    try:
        return await response._prepare_open_file(request, fobj, st, encoding)
    finally:
        fobj.close()


async def _gone(
    response: web.FileResponse, request: web.BaseRequest
) -> AbstractStreamWriter | None:
    """The file was stat'ed, then a delete won the race before it was opened: the JSON 404
    of a missing object, as when the delete comes first (headers were for the file)."""
    error = errors.StorageNotFound("the file was removed while it was read")
    body = json.dumps(error.body()).encode()
    for name in (hdrs.CONTENT_DISPOSITION, hdrs.ACCEPT_RANGES, "X-File-Name"):
        response.headers.popall(name, None)
    response.headers[hdrs.CACHE_CONTROL] = "no-store"
    response.set_status(error.status)
    response.content_type = "application/json"
    response.content_length = len(body)
    writer = await web.StreamResponse.prepare(response, request)
    await web.StreamResponse.write_eof(response, body)
    return writer
