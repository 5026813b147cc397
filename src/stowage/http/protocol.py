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
from aiohttp.http_parser import RawRequestMessage
from aiohttp.streams import EMPTY_PAYLOAD
from aiohttp.web_protocol import ERROR, RequestHandler, RequestPayloadError
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


#: Enough of a message's first bytes to read its method ("HEAD ").
_SNIFF = 8


class JsonRequestHandler(RequestHandler):
    """Remembers the first bytes of the message being parsed: when the parser fails,
    aiohttp hands ``handle_error`` a made-up GET, and an answer to a HEAD must carry no
    body (a client reads the JSON after the headers as the next answer's bytes)."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self._message_start = b""
        self._at_message_start = True

    def data_received(self, data: bytes) -> None:
        if self._at_message_start:
            self._message_start, self._at_message_start = b"", False
        if len(self._message_start) < _SNIFF:
            self._message_start += bytes(data[: _SNIFF - len(self._message_start)])
        count = self._request_count
        super().data_received(data)
        if self._request_count > count and self._messages:
            message, payload = self._messages[-1]
            if isinstance(message, RawRequestMessage):  # not the parser's error
                self._after_message(data, payload)

    def _after_message(self, data: bytes, payload: Any) -> None:
        """A message head was parsed: the next message starts after its body."""
        if payload is EMPTY_PAYLOAD:  # no body: it starts after the head's blank line
            rest = data.rpartition(b"\r\n\r\n")[2]
            self._message_start, self._at_message_start = rest[:_SNIFF], not rest
        elif payload.is_eof():
            self._at_message_start = True
        else:
            payload.on_eof(self._body_read)

    def _body_read(self) -> None:
        self._at_message_start = True

    def _failed_head(self, request: web.BaseRequest) -> bool:
        """A HEAD the parser could not read (aiohttp's stand-in request says GET)."""
        if request.method != ERROR.method:  # a real request that failed later
            return False
        return self._message_start.lstrip(b"\r\n").startswith(b"HEAD ")

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
        if request.writer.output_size > 0:  # a handler failed after its answer began
            raise ConnectionError("response already started; cannot send the error")
        # Never the exception's text: it quotes the raw line, query string included.
        log.info("refused a request the parser could not read: %s", type(exc).__name__)
        body = json.dumps(error.body()).encode()
        head = self._failed_head(request)
        response = web.Response(
            status=error.status,
            body=None if head else body,
            content_type="application/json",
            headers={"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"},
        )
        if head:  # the headers a GET gets, without the body (RFC 9110 9.3.2)
            response.headers["Content-Length"] = str(len(body))
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
