"""Answers from below the application: what aiohttp's parser refuses, in the error shape.

aiohttp answers a request it cannot parse (a request line or header over its limits, too
many headers, a bad chunk size, an unknown Content-Encoding, garbage) from its low-level
``RequestHandler.handle_error``, in plain text, and logs the exception with the first bytes
of the offending line, query string (and so a signature) included. ``JsonRequestHandler``
renders the same answers as JSON with a stable code and logs only the exception's class.
It is plugged in through the runner's server (``JsonServer``), the factory aiohttp calls
for every connection.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from aiohttp import http_exceptions as hx
from aiohttp import web
from aiohttp.web_protocol import RequestHandler, RequestPayloadError
from aiohttp.web_runner import AppRunner
from aiohttp.web_server import Server

from stowage import errors

log = logging.getLogger("stowage.http")
_REQUEST_LINE = re.compile(r"reading: b'[A-Z]+ ")


def error_for(status: int, exc: BaseException | None) -> errors.StowageError:
    if isinstance(exc, hx.LineTooLong):
        # The parser names the line it was reading only in its message.
        return errors.RequestLineTooLong() if _is_request_line(exc) else errors.HeadersTooLarge()
    if isinstance(exc, hx.ContentEncodingError):
        return errors.UnsupportedEncoding()
    if isinstance(exc, hx.BadHttpMessage) and "too many headers" in str(exc).lower():
        return errors.HeadersTooLarge()
    if status == 504:
        return errors.RequestTimeout()
    if status >= 500:
        return errors.StowageError()
    return errors.MalformedRequest()


def _is_request_line(exc: hx.LineTooLong) -> bool:
    """aiohttp's C parser quotes the URL as a ``bytearray`` and a header as ``bytes``; the
    pure-Python one quotes the request line from its method on."""
    text = str(exc)
    return "bytearray(" in text or _REQUEST_LINE.search(text) is not None


class JsonRequestHandler(RequestHandler):
    def log_exception(self, *args: Any, **kw: Any) -> None:
        """A client's broken body (bad gzip, a chunk size that is no number) surfaces again
        when aiohttp drains it after the answer: one line, no traceback, no bytes."""
        exc = kw.get("exc_info")
        if isinstance(exc, RequestPayloadError | hx.HttpProcessingError):
            log.info("dropped the rest of a malformed body: %s", type(exc).__name__)
            return
        super().log_exception(*args, **kw)

    def handle_error(
        self,
        request: Any,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        error = error_for(status, exc)
        # Never the exception's text: it quotes the raw line, query string included.
        log.info("refused a request the parser could not read: %s", type(exc).__name__)
        if request.writer.output_size > 0:
            raise ConnectionError("response already started; cannot send the error")
        response = web.Response(
            status=error.status,
            body=json.dumps(error.body()).encode(),
            content_type="application/json",
            headers={"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"},
        )
        response.force_close()
        return response


class JsonServer(Server):
    def __call__(self) -> RequestHandler:
        return JsonRequestHandler(self, loop=self._loop, **self._kwargs)


class JsonAppRunner(AppRunner):
    """An AppRunner whose connections answer protocol errors in the error shape."""

    async def _make_server(self) -> Server:
        # The same server aiohttp builds (handler, factory, every handler_args), rebuilt as
        # a JsonServer; relies on Server's attributes of aiohttp 3.x (pinned <4), covered
        # by tests/reliability/test_hostile.py::test_protocol_errors_are_in_the_error_shape.
        server = await super()._make_server()
        return JsonServer(
            server.request_handler,
            request_factory=server.request_factory,
            handler_cancellation=server.handler_cancellation,
            loop=server._loop,
            **server._kwargs,
        )
