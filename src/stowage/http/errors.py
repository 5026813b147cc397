"""The one place where errors become HTTP responses."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from aiohttp import HttpVersion11, web

from stowage import errors
from stowage.http.logpath import loggable

log = logging.getLogger("stowage.http")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

_HTTP_CODES = {
    404: errors.NotFound,
    405: errors.MethodNotAllowed,
    413: errors.PayloadTooLarge,
    400: errors.BadRequest,
}


def error_response(error: errors.StowageError) -> web.Response:
    response = web.json_response(error.body(), status=error.status)
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Cache-Control"] = "no-store"
    response.headers.update(error.headers)
    return response


@web.middleware
async def error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except errors.StowageError as exc:
        if _begun(request, exc):
            raise
        if exc.status >= 500:
            path = loggable(request.raw_path)
            log.warning("%s %s failed: %s %s", request.method, path, exc.code, exc.message)
        return error_response(exc)
    except web.HTTPException as exc:
        if exc.status < 400 or _begun(request, exc):
            raise
        cls = _HTTP_CODES.get(exc.status, errors.BadRequest)
        error = cls(exc.reason)
        response = error_response(error)
        response.set_status(exc.status)
        if exc.status == 405 and "Allow" in exc.headers:
            response.headers["Allow"] = exc.headers["Allow"]
        return response
    except (ConnectionResetError, BrokenPipeError):
        raise
    except Exception as exc:
        if _begun(request, exc):
            raise
        log.exception("unhandled error on %s %s", request.method, loggable(request.raw_path))
        return error_response(errors.StowageError())


def _begun(request: web.Request, exc: BaseException) -> bool:
    """Whether the answer had begun (its status line and headers out) when ``exc`` came:
    no error answer can follow then, only a cut connection, which aiohttp makes of the
    exception raised again (a streamed ``zip/[h1,h2]`` whose second file was removed as
    the first was sent had a whole 404 written into its 200's chunked body, the body
    then ended as if whole and the connection kept)."""
    if request.writer.output_size == 0:
        return False
    path = loggable(request.raw_path)
    log.warning("%s %s failed after its answer began: %r", request.method, path, exc)
    return True


async def expect_handler(request: web.Request) -> web.StreamResponse | None:
    """aiohttp's own answers an unknown Expect with plain text, outside every middleware;
    this one keeps the JSON error shape. ``100-continue`` behaves as before."""
    expect = request.headers.get("Expect", "")
    if request.version != HttpVersion11:
        return None
    if expect.lower() == "100-continue":
        await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        request.writer.output_size = 0  # the interim answer is not part of the body
        return None
    response = error_response(errors.ExpectationFailed(expect=expect[:100]))
    response.force_close()
    return response


def use_json_expect_handler(app: web.Application) -> None:
    # aiohttp has no public setter for a route's expect handler once it is added.
    for route in app.router.routes():
        route._expect_handler = expect_handler
