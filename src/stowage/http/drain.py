"""Graceful shutdown: finish the requests in flight, uploads included.

aiohttp's own shutdown stops reading from connections at once, so an upload whose body
is still arriving would stall. On SIGTERM we therefore first close the listeners only,
let running handlers finish (they may still read their bodies), answer with
``Connection: close`` meanwhile so balancers stop reusing our keep-alive connections,
and only then let aiohttp shut down (which waits for responses still being sent).
"""

from __future__ import annotations

import asyncio
import contextlib

from aiohttp import web
from aiohttp.typedefs import Handler


class Drain:
    def __init__(self) -> None:
        self.draining = False
        self._active = 0
        self._idle = asyncio.Event()
        self._idle.set()

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        self._active += 1
        self._idle.clear()
        try:
            response = await handler(request)
            if self.draining:
                response.force_close()
            return response
        finally:
            self._active -= 1
            if self._active == 0:
                self._idle.set()

    async def stop(self, runners: list[web.AppRunner], timeout: float) -> None:
        """Closes the listeners, waits up to ``timeout`` for running handlers, then shuts
        the runners down (aiohttp gives responses still being sent its own
        ``shutdown_timeout``, set to the same value)."""
        self.draining = True
        for runner in runners:
            for site in list(runner.sites):
                await site.stop()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._idle.wait()
        await asyncio.gather(*(runner.cleanup() for runner in runners))
