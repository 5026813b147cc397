"""The slots URL fetches run in (``fetch.Fetcher``): ``fetch_max_concurrent`` of them,
at most ``fetch_app_max_concurrent`` of them held by one app at once, and a fetch that finds none
free waits ``fetch_slot_wait`` seconds at most, then is refused with 503 ``FETCH_BUSY``
and ``Retry-After``; a background job's fetch (``background_wait``) waits longer, as
no client waits on it. A probe's 16 transformations of one app against an origin sending a
byte every 3 s held every slot; another app's store from a URL then waited 22 s, and
nothing answered 503.
"""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from collections.abc import AsyncIterator, Callable

from stowage import errors

#: Whose fetch it is: an app's API key, or None (one owner for the rest: an import).
Owner = str | None


class FetchSlots:
    def __init__(self, total: int, per_owner: int | None = None, wait: float = math.inf) -> None:
        self.total = max(1, total)
        #: The most one owner holds at once (None: every slot).
        self.per_owner = max(1, min(self.total, per_owner or self.total))
        self.wait = wait
        self._held: Counter[Owner] = Counter()
        self._waiters: set[asyncio.Future[None]] = set()

    @property
    def used(self) -> int:
        return sum(self._held.values())

    @property
    def waiting(self) -> int:
        """Fetches waiting for a slot now."""
        return len(self._waiters)

    def _free_for(self, owner: Owner) -> bool:
        return self.used < self.total and self._held[owner] < self.per_owner

    async def acquire(self, owner: Owner, wait: float | None = None) -> Callable[[], None]:
        """A slot for ``owner`` (its release, to be called once), or FETCH_BUSY once
        ``wait`` seconds (else the slots' own ``wait``) passed without one."""
        loop = asyncio.get_running_loop()
        wait = self.wait if wait is None else wait
        deadline = None if math.isinf(wait) else loop.time() + wait
        while not self._free_for(owner):
            woken: asyncio.Future[None] = loop.create_future()
            self._waiters.add(woken)
            try:
                async with asyncio.timeout_at(deadline):
                    await woken
            except TimeoutError:
                raise self.busy(owner, wait) from None
            finally:
                self._waiters.discard(woken)
        self._held[owner] += 1
        return self._releaser(owner)

    def busy(self, owner: Owner, wait: float | None = None) -> errors.FetchBusy:
        mine = self._held[owner] >= self.per_owner
        refused = errors.FetchBusy(
            "this app's url fetches hold their share of the fetch slots"
            if mine
            else "every url fetch slot is taken",
            slots=self.total,
            per_app=self.per_owner,
        )
        # a shorter wait of its own (what was left of a list's) still asks for the whole
        wait = self.wait if wait is None or math.isinf(self.wait) else max(wait, self.wait)
        refused.headers["Retry-After"] = str(max(1, math.ceil(wait)))
        return refused

    def _releaser(self, owner: Owner) -> Callable[[], None]:
        done = False

        def release() -> None:
            nonlocal done
            if done:
                return
            done = True
            self._held[owner] -= 1
            if self._held[owner] <= 0:
                del self._held[owner]
            for woken in self._waiters:  # each looks again whether a slot is its
                if not woken.done():
                    woken.set_result(None)

        return release


async def paced(
    chunks: AsyncIterator[bytes], min_rate: float, window: float
) -> AsyncIterator[bytes]:
    """``chunks`` as long as they come at ``min_rate`` bytes a second or more, averaged
    over each ``window`` seconds (0: no minimum); a slower body is cut with 504. The idle
    bound (``fetch_read_timeout``) ends a body that sends nothing; this one ends a body
    that drips (a byte every 3 s held a slot for ``fetch_total_timeout``, 900 s)."""
    loop = asyncio.get_running_loop()
    start, count = loop.time(), 0
    async for chunk in chunks:
        count += len(chunk)
        now = loop.time()
        if min_rate > 0 and now - start >= window:
            if count < min_rate * (now - start):
                raise errors.UpstreamTimeout(
                    f"the url source sent {count} bytes in {now - start:.0f} s, under "
                    f"the {min_rate:g} bytes a second a fetch must keep up"
                )
            start, count = now, 0
        yield chunk
