"""The URLs a list names (``/<APIKEY>/zip/[u1,u2]``, ``animate/[…]``), read several at
once: ten URLs whose origin took 0.3 s each were read one after the other, 3.5 s in all.

A request reads at most ``parallel`` of them at once (``Fetcher.per_request``: half of
its app's fetch slots), and never fails for busy slots where reading the URLs one after
the other would have read them. Each of its readers takes a URL in the list's order; a
reader that finds no slot free while another reader of the list is still reading hands
its URL back and stops (it takes what is free at once, and waits for nothing); the
last reader waits for a slot as a URL alone does, ``fetch_slot_wait`` from the end of
the list's last fetch (or from its start), then 503 ``FETCH_BUSY``. Every reader once
waited its own ``fetch_slot_wait`` from the list's start: with one slot freed for it,
the second URL's wait ran out while the first was still read, and the list was refused
where reading in order would have waited for the first URL's slot.

The answer is what reading them in order gave: the files in the list's order, and on
failure the error of the first URL (in that order) that failed, or the limit its bytes
crossed. The reads still running are then cancelled, and every file read for the
request is removed as the caller's stack closes (a cancelled read removes its own).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager

from stowage import errors
from stowage.processing.urlsources import Held

#: A URL's file, waiting at most the given seconds for a fetch slot.
Opener = Callable[[str, float], AbstractAsyncContextManager[Held]]
Within = Callable[[int, int], None]


async def read_listed(
    stack: contextlib.AsyncExitStack,
    listed: Sequence[str],
    opened: Opener,
    within: Within,
    parallel: int,
    slot_wait: float,
) -> list[Held]:
    """Each listed URL's file, in the list's order (a URL listed twice is read once and
    counts twice), held until ``stack`` closes; ``within`` is asked after each file in
    order with the count and the bytes so far."""
    reading = _Reading(list(dict.fromkeys(listed)), opened, slot_wait)
    for holder in reading.holders.values():
        stack.push_async_callback(holder.aclose)
    readers = reading.start(max(1, parallel))
    # runs first as the stack closes: no read is still running when the files go
    stack.push_async_callback(reading.stopped, readers)
    held: list[Held] = []
    total = 0
    try:
        for url in listed:
            held.append(await asyncio.shield(reading.results[url]))
            total += held[-1].path.stat().st_size
            within(len(listed), total)
    except BaseException:
        await reading.stopped(readers)  # the URLs after the first failure
        raise
    return held


class _Reading:
    """The readers of one list: the URLs not yet taken, each URL's file (a future), and
    how many readers still read."""

    def __init__(self, unique: list[str], opened: Opener, slot_wait: float) -> None:
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._left = deque(unique)
        self._opened = opened
        self._wait = slot_wait
        self.results: dict[str, asyncio.Future[Held]] = {u: loop.create_future() for u in unique}
        self.holders = {url: contextlib.AsyncExitStack() for url in unique}
        self._readers = 0
        self._since = loop.time()  # the end of the list's last fetch, or its start

    def start(self, parallel: int) -> list[asyncio.Task[None]]:
        self._readers = min(parallel, len(self._left))
        return [asyncio.create_task(self._reader()) for _ in range(self._readers)]

    async def _reader(self) -> None:
        while self._left:
            url = self._left.popleft()
            try:
                found = await self._read(url)
            except Exception as exc:  # the URL's error, raised in the list's order
                self.results[url].set_exception(exc)
                continue
            if found is None:
                return  # handed back: another reader reads it
            self._since = self._loop.time()
            self.results[url].set_result(found)
        self._readers -= 1  # at once after finding nothing left: none is handed back since

    async def _read(self, url: str) -> Held | None:
        """The URL's file, or None when no slot was free while another reader reads
        (the URL handed back, this reader stopped)."""
        while True:
            alone = self._readers == 1
            wait = max(0.0, self._wait - (self._loop.time() - self._since)) if alone else 0.0
            try:
                return await self.holders[url].enter_async_context(self._opened(url, wait))
            except errors.FetchBusy:
                if self._readers > 1:
                    self._readers -= 1
                    self._left.appendleft(url)
                    return None
                if alone:
                    raise
                # the others stopped while this one asked: it waits as the list's one reader

    async def stopped(self, readers: list[asyncio.Task[None]]) -> None:
        """Every reader cancelled and awaited (a cancelled read removes its partial file),
        and every URL's error taken (a later URL's failure is never raised)."""
        for reader in readers:
            reader.cancel()
        await asyncio.gather(*readers, return_exceptions=True)
        for result in self.results.values():
            if result.done() and not result.cancelled():
                result.exception()
            else:
                result.cancel()
