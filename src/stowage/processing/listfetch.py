"""The URLs a list names (``/<APIKEY>/zip/[u1,u2]``, ``animate/[…]``), read several at
once: ten URLs whose origin took 0.3 s each were read one after the other, 3.5 s in all.

A request reads at most ``parallel`` of them at once (``Fetcher.per_request``: half of
its app's fetch slots), and each fetch still takes its slot as a URL alone does (a wait
of ``fetch_slot_wait`` at most, then 503 ``FETCH_BUSY``): a list never holds every slot
of its app. The answer is what reading them in order gave: the files in the list's
order, and on failure the error of the first URL (in that order) that failed, or the
limit its bytes crossed. The URLs after it are cancelled, and every file read for the
request is removed as the caller's stack closes (a cancelled read removes its own).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager

from stowage.processing.urlsources import Held

Opener = Callable[[str], AbstractAsyncContextManager[Held]]
Within = Callable[[int, int], None]


async def read_listed(
    stack: contextlib.AsyncExitStack,
    listed: Sequence[str],
    opened: Opener,
    within: Within,
    parallel: int,
) -> list[Held]:
    """Each listed URL's file, in the list's order (a URL listed twice is read once and
    counts twice), held until ``stack`` closes; ``within`` is asked after each file in
    order with the count and the bytes so far."""
    unique = list(dict.fromkeys(listed))
    gate = asyncio.Semaphore(max(1, parallel))
    holders = [contextlib.AsyncExitStack() for _ in unique]
    for holder in holders:
        stack.push_async_callback(holder.aclose)

    async def one(url: str, holder: contextlib.AsyncExitStack) -> Held:
        async with gate:
            return await holder.enter_async_context(opened(url))

    tasks = {url: asyncio.create_task(one(url, h)) for url, h in zip(unique, holders, strict=True)}
    # runs first as the stack closes: no read is still running when the files go
    stack.push_async_callback(_stopped, list(tasks.values()))
    held: list[Held] = []
    total = 0
    try:
        for url in listed:
            held.append(await tasks[url])
            total += held[-1].path.stat().st_size
            within(len(listed), total)
    except BaseException:
        await _stopped(list(tasks.values()))  # the URLs after the first failure
        raise
    return held


async def _stopped(tasks: list[asyncio.Task[Held]]) -> None:
    """Every read not done cancelled and awaited (its partial file removed by itself)."""
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
