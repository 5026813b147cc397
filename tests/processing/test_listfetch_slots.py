"""``listfetch.read_listed`` against real ``FetchSlots`` (generated schedules, seed
5306): the app's slots held by other fetches, the first of them let go within the wait,
later ones at any time; the list's URLs take from 0.02 s to twice the wait each. Reading
them one after the other succeeds on every such schedule (the first freed slot carries
each URL in turn), so the list must too, with its files in its order and never more
reads at once than ``parallel``: 4 of the 12 schedules were FETCH_BUSY when each reader
waited its own ``fetch_slot_wait`` from the list's start. With no slot let go within the
wait, it is FETCH_BUSY after the wait, not before (seed 5307)."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from stowage import errors
from stowage.core.fetchslots import FetchSlots
from stowage.processing import listfetch
from stowage.processing.urlsources import Held

WAIT = 0.3
OWNER = "app"


class _Reads:
    """A fake URL source: each URL held ``seconds[url]`` in a slot of ``slots``."""

    def __init__(self, slots: FetchSlots, seconds: dict[str, float], folder: Path) -> None:
        self.slots, self.seconds, self.folder = slots, seconds, folder
        self.running = self.most = 0

    @contextlib.asynccontextmanager
    async def opened(self, url: str, wait: float) -> AsyncIterator[Held]:
        release = await self.slots.acquire(OWNER, wait)
        self.running += 1
        self.most = max(self.most, self.running)
        try:
            await asyncio.sleep(self.seconds[url])
        finally:
            self.running -= 1
            release()
        path = self.folder / url
        path.write_text(url)
        yield Held(path, "text/plain", reused=False)


async def _holders(slots: FetchSlots, frees: list[float]) -> list[asyncio.Task[None]]:
    """Each slot the app may hold taken, let go after its time (inf: never)."""

    async def hold(release: object, after: float) -> None:
        await asyncio.sleep(after if after != float("inf") else 3600)
        release()  # type: ignore[operator]

    held = [await slots.acquire(OWNER) for _ in frees]
    return [asyncio.create_task(hold(r, after)) for r, after in zip(held, frees, strict=True)]


async def test_a_list_is_read_whenever_reading_it_in_order_would_be(tmp_path: Path) -> None:
    rnd = random.Random(5306)
    for case in range(12):
        await _schedule(rnd, tmp_path / str(case))


async def _schedule(rnd: random.Random, folder: Path) -> None:
    folder.mkdir()
    per_owner = rnd.randint(1, 6)
    frees = sorted(rnd.uniform(0.0, WAIT * 0.5) for _ in range(rnd.randint(1, per_owner)))
    frees += [rnd.choice([rnd.uniform(WAIT, 3 * WAIT), float("inf")]) for _ in range(per_owner)]
    frees = frees[:per_owner]
    slots = FetchSlots(16, per_owner, WAIT)
    urls = [f"u{i}" for i in range(rnd.randint(2, 6))]
    seconds = {url: rnd.uniform(0.02, 2 * WAIT) for url in urls}
    listed = urls + rnd.sample(urls, rnd.randint(0, 2))  # repeats are read once
    reads = _Reads(slots, seconds, folder)
    parallel = rnd.randint(1, 4)
    holders = await _holders(slots, frees)
    try:
        async with contextlib.AsyncExitStack() as stack:
            held = await listfetch.read_listed(
                stack, listed, reads.opened, lambda *_: None, parallel, WAIT
            )
            assert [h.path.read_text() for h in held] == listed, (frees, seconds)
        assert reads.most <= parallel
    finally:
        for task in holders:
            task.cancel()
        await asyncio.gather(*holders, return_exceptions=True)


async def test_a_list_with_no_slot_let_go_is_busy_after_the_wait(tmp_path: Path) -> None:
    rnd = random.Random(5307)
    for case in range(3):
        await _busy(rnd, tmp_path / str(case))


async def _busy(rnd: random.Random, tmp_path: Path) -> None:
    tmp_path.mkdir()
    per_owner = rnd.randint(1, 4)
    slots = FetchSlots(16, per_owner, WAIT)
    reads = _Reads(slots, {f"u{i}": 0.01 for i in range(5)}, tmp_path)
    holders = await _holders(slots, [float("inf")] * per_owner)
    started = time.monotonic()
    try:
        with pytest.raises(errors.FetchBusy) as refused:
            async with contextlib.AsyncExitStack() as stack:
                await listfetch.read_listed(
                    stack, list(reads.seconds), reads.opened, lambda *_: None, 3, WAIT
                )
        assert time.monotonic() - started >= WAIT * 0.95
        assert refused.value.headers["Retry-After"] == "1"
        assert reads.most == 0
    finally:
        for task in holders:
            task.cancel()
        await asyncio.gather(*holders, return_exceptions=True)
