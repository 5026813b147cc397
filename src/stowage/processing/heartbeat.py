"""Keeps a queue claim while its work runs: the lease is renewed every ``every`` seconds,
so a lease can be short (a stopped node's job is due again soon after it stops) however
long the work takes. When a renewal says the claim is no longer the worker's (another
worker took it over, or the row was dropped), the work is cancelled: its result would be
refused anyway."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
log = logging.getLogger("stowage.heartbeat")


class LeaseLost(Exception):
    """The claim went to another worker (or its row went) while the work ran."""


async def while_held(
    work: Coroutine[Any, Any, T], renew: Callable[[], Awaitable[bool]], every: float
) -> T:
    """``work``'s result, renewing the claim every ``every`` seconds while it runs.

    A renewal that fails to reach the registry is logged and tried again at the next beat
    (the lease is three beats long: one missed beat loses nothing). Cancelling the caller
    cancels ``work`` too."""
    task = asyncio.ensure_future(work)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=every)
            if done:
                return task.result()
            if not await _beat(renew):
                raise LeaseLost("the claim is no longer this worker's")
    finally:
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


async def _beat(renew: Callable[[], Awaitable[bool]]) -> bool:
    try:
        return await renew()
    except Exception:
        log.warning("renewing a lease failed; trying again at the next beat", exc_info=True)
        return True
