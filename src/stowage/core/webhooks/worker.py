"""The delivery worker: claims due deliveries from the registry and posts them.

Claims carry a lease, so several workers (threads of one node, or many nodes on one
PostgreSQL registry) never post the same row at once, and a worker that died loses
its rows to another once the lease runs out. Failed attempts are retried with
exponential backoff until ``webhook_max_attempts``; a refused address is not retried.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
import time

from yarl import URL

from stowage.config import Settings
from stowage.core.wake import Wake
from stowage.core.webhooks.post import Outcome, Poster, refused
from stowage.registry.base import (
    WEBHOOK_DELIVERED,
    WEBHOOK_FAILED,
    WEBHOOK_PENDING,
    WebhookDelivery,
    WebhookStore,
)
from stowage.registry.queue import Backoff

log = logging.getLogger("stowage.webhooks")
PRUNE_EVERY = 3600.0


def backoff(settings: Settings, attempts: int) -> float:
    """Seconds to wait after the ``attempts``-th failed attempt."""
    return Backoff(settings.webhook_retry_base_delay, settings.webhook_retry_max_delay).delay(
        attempts
    )


class Worker:
    def __init__(self, settings: Settings, registry: WebhookStore) -> None:
        self.settings = settings
        self.registry = registry
        self.name = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self.lease = 2 * settings.webhook_timeout + 30
        self.poster = Poster(
            allow_private=settings.webhook_allow_private, timeout=settings.webhook_timeout
        )
        self._wake = Wake()
        self._inflight: set[asyncio.Task[None]] = set()
        self._recording: set[asyncio.Future[None]] = set()
        self._last_prune = 0.0

    def wake(self) -> None:
        self._wake.set()

    async def run(self) -> None:
        while True:
            try:
                await self._fill()
                await self._prune()
            except Exception:
                log.exception("webhook worker round failed")
            await self._idle()

    async def close(self) -> None:
        """Stops in-flight attempts; they go back to the queue, due at once."""
        for task in list(self._inflight):
            task.cancel()
        await asyncio.gather(*self._inflight, return_exceptions=True)
        await asyncio.gather(*self._recording, return_exceptions=True)
        await self.poster.close()

    async def _idle(self) -> None:
        await self._wake.wait(self.settings.webhook_poll_interval)

    async def _fill(self) -> None:
        free = self.settings.webhook_concurrency - len(self._inflight)
        if free <= 0:
            return
        claimed = await self.registry.claim_webhooks(self.name, time.time(), self.lease, free)
        for delivery in claimed:
            task = asyncio.create_task(self._deliver(delivery))
            self._inflight.add(task)
            task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._inflight.discard(task)
        self.wake()

    async def _prune(self) -> None:
        now = time.time()
        if now - self._last_prune >= PRUNE_EVERY:
            self._last_prune = now
            await self.registry.prune_webhooks(now - self.settings.webhook_log_retention)

    async def _deliver(self, delivery: WebhookDelivery) -> None:
        try:
            outcome = await self._attempt(delivery)
        except asyncio.CancelledError:
            await self._finish(delivery, WEBHOOK_PENDING, Outcome(error="interrupted by shutdown"))
            raise
        except Exception as exc:  # a bug must not kill the worker or lose the row
            log.exception("webhook delivery %s crashed", delivery.id)
            outcome = Outcome(error=f"internal error: {type(exc).__name__}")
        # A shutdown arriving now must not drop the outcome: ``close`` waits for it.
        recording = asyncio.ensure_future(self._record(delivery, outcome))
        self._recording.add(recording)
        recording.add_done_callback(self._recording.discard)
        await asyncio.shield(recording)

    async def _attempt(self, delivery: WebhookDelivery) -> Outcome:
        if delivery.attempts > self.settings.webhook_max_attempts:
            return Outcome(final=True, error="gave up: attempts interrupted too often")
        app = await self.registry.get_app(delivery.api_key)
        if app is None:
            return refused("the app no longer exists")
        return await self.poster.post(delivery.url, delivery.body, app.secret)

    async def _record(self, delivery: WebhookDelivery, outcome: Outcome) -> None:
        target = _loggable(delivery.url)
        if outcome.ok:
            log.info("webhook %s %s delivered to %s", delivery.id, delivery.action, target)
            await self._finish(delivery, WEBHOOK_DELIVERED, outcome)
        elif outcome.final or delivery.attempts >= self.settings.webhook_max_attempts:
            log.warning("webhook %s to %s failed: %s", delivery.id, target, outcome.error)
            await self._finish(delivery, WEBHOOK_FAILED, outcome)
        else:
            delay = backoff(self.settings, delivery.attempts)
            log.info(
                "webhook %s to %s: %s; retry in %gs", delivery.id, target, outcome.error, delay
            )
            await self._finish(delivery, WEBHOOK_PENDING, outcome, time.time() + delay)
            asyncio.get_running_loop().call_later(delay, self.wake)

    async def _finish(
        self, delivery: WebhookDelivery, status: str, outcome: Outcome, due: float = 0.0
    ) -> None:
        now = time.time()
        await self.registry.finish_webhook(
            delivery.id,
            self.name,
            status,
            now=now,
            next_attempt=due or now,
            response_code=outcome.code,
            error=outcome.error,
        )


def _loggable(url: str) -> str:
    """Without the query string: a token there must not reach the log."""
    try:
        return str(URL(url).with_query(None).with_fragment(None))
    except (ValueError, TypeError):
        return "<malformed url>"
