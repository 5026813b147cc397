"""One URL fetch's deadline, moved from phase to phase (``fetch.Fetcher``)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import aiohttp


class Phases:
    """One request's deadline, moved as it passes from phase to phase: ``connect`` seconds
    to resolve, connect and send the request, then ``read`` seconds for the answer's status
    line and headers, interim (1xx) answers included. aiohttp's ``sock_read`` alone bounds
    neither: it restarts on every byte (headers trickled a byte at a time never end) and
    stops after a 1xx (``100 Continue`` then silence waited for ``total``). The body's reads
    keep ``sock_read``. A bound of 0 is none, as aiohttp takes it."""

    def __init__(self, bound: asyncio.Timeout, connect: float, read: float) -> None:
        self._bound = bound
        self._connect = connect
        self._read = read

    def _after(self, seconds: float) -> None:
        when = asyncio.get_running_loop().time() + seconds if seconds > 0 else None
        self._bound.reschedule(when)

    @staticmethod
    def tracing() -> aiohttp.TraceConfig:
        """The session's hooks: each request carries its ``Phases`` as its trace context."""

        async def connecting(_: object, ctx: SimpleNamespace, __: object) -> None:
            ctx.trace_request_ctx._after(ctx.trace_request_ctx._connect)

        async def sent(_: object, ctx: SimpleNamespace, __: object) -> None:
            ctx.trace_request_ctx._after(ctx.trace_request_ctx._read)

        trace = aiohttp.TraceConfig()
        trace.on_request_start.append(connecting)
        trace.on_request_headers_sent.append(sent)
        return trace
