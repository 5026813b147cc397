"""The edge on the change path (``core/events.py``): a write's purge step, and a sink.

``purge(change)`` is the write's own step before it answers: the purge requests to all
cache targets go out at once, each bounded by ``edge_purge_timeout``, so a write waits
for the slowest cache or the timeout, never longer. A cache that did not answer in time
(down, overloaded, unreachable) gets a row per tag in the registry's purge queue;
``worker.py`` sends those until they are acknowledged. Until then that cache may serve
the old content, at most for ``edge_ttl`` seconds.

``publish(change)``, as every sink, never waits on the network: it schedules the echoes,
the same purge sent again ``ECHO_DELAY`` later and once more when any transformation that
read the old version has finished (``late_echo``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence

from stowage.config import Settings
from stowage.config.processing import JOB_GRACE_SECONDS
from stowage.core.events import Change
from stowage.edge import metrics
from stowage.edge.base import CacheTarget, NullPurger, stale_tags
from stowage.edge.targets import build_targets
from stowage.edge.worker import RetryWorker
from stowage.registry.base import EdgePurge, PurgeQueue

log = logging.getLogger("stowage.edge")
#: Seconds after a write's purge when it is sent once more, in the background. A read
#: that reached the origin just before the write committed may be stored by the cache
#: after the first purge: its response headers arrive later. The echo removes it.
ECHO_DELAY = 2.0


def late_echo(settings: Settings) -> float:
    """Seconds after a write when no transformation that read the old version can still
    be answered: its wait for a slot, its deadline and the kill's grace. A render of the
    old version taking seconds (a large photo to AVIF) reached the cache after both the
    purge and the echo, and was kept until ``edge_ttl``."""
    return settings.processing_wait_seconds + settings.processing_job_seconds + JOB_GRACE_SECONDS


class EdgePurger:
    def __init__(
        self, settings: Settings, queue: PurgeQueue, targets: Sequence[CacheTarget]
    ) -> None:
        self.targets = {target.name: target for target in targets}
        self.caches = list(self.targets)
        self.timeout = settings.edge_purge_timeout
        self.retry_delay = settings.edge_purge_retry_delay
        self.queue = queue
        self.worker = RetryWorker(queue, self.send, settings)
        self._task: asyncio.Task[None] | None = None
        self._echoes: set[asyncio.Task[None]] = set()
        self._timers: set[asyncio.TimerHandle] = set()
        self.echo_delays = sorted({ECHO_DELAY, late_echo(settings)})

    async def send(self, cache: str, tags: Sequence[str], timeout: float) -> str | None:
        return await self.targets[cache].purge(tags, timeout)

    async def purge(self, change: Change) -> None:
        """The write's purge step: returns when every cache acknowledged or timed out."""
        await self.purge_tags(stale_tags(change))

    async def publish(self, change: Change) -> None:
        """As a sink: the echo of the purge, later, in the background."""
        tags = stale_tags(change)
        if tags:
            self._echo_later(tags)

    async def purge_tags(self, tags: Sequence[str]) -> None:
        if not tags:
            return
        started = time.perf_counter()
        if len(self.caches) == 1:  # no task to schedule: one turn of the event loop less
            outcomes = [await self.send(self.caches[0], tags, self.timeout)]
        else:
            outcomes = await asyncio.gather(
                *(self.send(cache, tags, self.timeout) for cache in self.caches)
            )
        metrics.PURGE_SECONDS.observe(time.perf_counter() - started)
        await self._settle(outcomes, tags)

    async def _settle(self, outcomes: list[str | None], tags: Sequence[str]) -> None:
        failed = [(cache, why) for cache, why in zip(self.caches, outcomes, strict=True) if why]
        metrics.PURGES.inc(len(self.caches) - len(failed), result="acked")
        if failed:
            await self._enqueue(failed, tags)

    def _echo_later(self, tags: list[str]) -> None:
        for delay in self.echo_delays:
            self._echo_after(delay, tags)

    def _echo_after(self, delay: float, tags: list[str]) -> None:
        def start() -> None:
            self._timers.discard(timer)
            task = asyncio.create_task(self._echo(tags))
            self._echoes.add(task)
            task.add_done_callback(self._echoes.discard)

        timer = asyncio.get_running_loop().call_later(delay, start)
        self._timers.add(timer)

    async def _echo(self, tags: list[str]) -> None:
        outcomes = await asyncio.gather(
            *(self.send(cache, tags, self.timeout) for cache in self.caches)
        )
        await self._settle(outcomes, tags)

    async def _enqueue(self, failed: list[tuple[str, str]], tags: Sequence[str]) -> None:
        now = time.time()
        rows = [
            EdgePurge(0, cache, tag, next_attempt=now + self.retry_delay, last_error=why)
            for cache, why in failed
            for tag in tags
        ]
        for cache, why in failed:
            log.warning(
                "edge cache %s did not acknowledge the purge of %s (%s): queued for retry",
                cache,
                " ".join(tags),
                why,
            )
        metrics.PURGES.inc(len(failed), result="queued")
        try:
            await self.queue.enqueue_purges(rows)
        except Exception:  # the write has happened: it must not fail for this
            log.exception("could not queue edge purges; the cache TTL will heal them")
            return
        self.worker.wake_later(self.retry_delay)

    async def start(self) -> None:
        for target in self.targets.values():
            target.warm()
        if self._task is None:
            self._task = asyncio.create_task(self.worker.run(), name="edge-purge-worker")

    async def close(self) -> None:
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()
        for echo in list(self._echoes):
            echo.cancel()
        await asyncio.gather(*self._echoes, return_exceptions=True)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        for target in self.targets.values():
            await target.close()


def build_purger(settings: Settings, registry: PurgeQueue) -> EdgePurger | NullPurger:
    """An ``EdgePurger`` when caches are configured, else one that does nothing."""
    bypass = settings.edge_bypass_url
    if bypass and not bypass.startswith(("http://", "https://")):
        raise ValueError(f"edge_bypass_url: not an http(s) URL: {bypass!r}")
    if not settings.edge_cache_urls:
        return NullPurger()
    return EdgePurger(settings, registry, build_targets(settings))
