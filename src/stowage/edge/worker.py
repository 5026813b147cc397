"""Sends queued purges again until their cache acknowledges them.

Any node's worker may take any row (claims carry a lease, as webhook deliveries do), so
a purge queued by a node that then stopped is still sent. Retries back off from
``edge_purge_retry_delay`` doubling to ``MAX_DELAY``; a row is never given up: the cache
it names was configured, and until the purge lands it may serve old content.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
import time
from collections.abc import Awaitable, Callable, Sequence

from stowage.config import Settings
from stowage.core.wake import Wake
from stowage.edge import metrics
from stowage.registry.base import EdgePurge, PurgeQueue

log = logging.getLogger("stowage.edge")
MAX_DELAY = 60.0
BATCH = 32
#: Sends one purge to one cache: (cache, tags, timeout) -> why it failed, or None.
Send = Callable[[str, Sequence[str], float], Awaitable[str | None]]


class RetryWorker:
    def __init__(self, queue: PurgeQueue, send: Send, settings: Settings) -> None:
        self.queue = queue
        self.send = send
        self.timeout = max(settings.edge_purge_timeout, 1.0)  # no write waits on a retry
        self.base_delay = max(settings.edge_purge_retry_delay, 0.05)  # never a busy loop
        self.name = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self.lease = self.timeout + 30
        self._wake = Wake()

    def wake_later(self, delay: float) -> None:
        asyncio.get_running_loop().call_later(delay, self._wake.set)

    def backoff(self, attempts: int) -> float:
        return float(min(self.base_delay * 2 ** max(attempts - 1, 0), MAX_DELAY))

    async def run(self) -> None:
        while True:
            try:
                while await self.round():
                    pass
                metrics.QUEUE.set(float(await self.queue.purge_queue_depth()))
            except Exception:
                log.exception("edge purge worker round failed")
            await self._wake.wait(self.base_delay)

    async def round(self) -> int:
        """Sends the due purges once; returns how many it took."""
        claimed = await self.queue.claim_purges(self.name, time.time(), self.lease, BATCH)
        await asyncio.gather(*(self._retry(p) for p in claimed))
        return len(claimed)

    async def _retry(self, row: EdgePurge) -> None:
        why = await self.send(row.cache, [row.tag], self.timeout)
        if why is None:
            metrics.PURGES.inc(result="retried")
            log.info("edge cache %s acknowledged the queued purge of %s", row.cache, row.tag)
            await self.queue.finish_purge(row.id, self.name, done=True, next_attempt=0.0)
            return
        metrics.PURGES.inc(result="failed")
        delay = self.backoff(row.attempts)
        log.warning(
            "edge cache %s: queued purge of %s failed again (%s); retry in %gs",
            row.cache,
            row.tag,
            why,
            delay,
        )
        await self.queue.finish_purge(
            row.id, self.name, done=False, next_attempt=time.time() + delay, error=why
        )
