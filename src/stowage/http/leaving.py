"""Work for a client that has gone is stopped, not finished for no one.

aiohttp runs a handler to its end after the client closes the connection. For work
that holds a shared slot and keeps nothing (a URL source's fetch, which may trickle for
minutes, and its job), that lets clients that give up fill every fetch slot of the node.
``unless_gone`` runs such work and cancels it once the connection is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import TypeVar

from aiohttp import web

from stowage import errors

T = TypeVar("T")
POLL_SECONDS = 0.25  # how soon a closed connection is noticed


async def unless_gone(request: web.Request, work: Awaitable[T]) -> T:
    """``work``'s result; ``ClientGone`` once the client has closed its connection
    (``work`` is cancelled first, and its cleanup runs)."""
    task = asyncio.ensure_future(work)
    try:
        while not task.done():
            await asyncio.wait({task}, timeout=POLL_SECONDS)
            if not task.done() and gone(request):
                raise errors.ClientGone()
        return task.result()
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task


def gone(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()
