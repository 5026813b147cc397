"""Webhooks as a change sink (``core/events.py``): enqueue, wake the worker, return."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from collections.abc import Callable
from typing import Any

from stowage.config import Settings
from stowage.core import events
from stowage.core.events import Change
from stowage.core.webhooks.payload import event_body
from stowage.core.webhooks.worker import Worker
from stowage.registry.base import App, FileRecord, WebhookDelivery, WebhookStore

log = logging.getLogger("stowage.webhooks")


class Webhooks:
    def __init__(
        self, settings: Settings, registry: WebhookStore, link: Callable[[FileRecord], str]
    ) -> None:
        self.registry = registry
        self.link = link
        self.worker = Worker(settings, registry)
        self._task: asyncio.Task[None] | None = None

    async def publish(self, change: Change) -> None:
        """File changes only: the Filestack webhooks have no event for an app's."""
        app, action, record = change.app, change.action, change.record
        if not app.webhooks or record is None or action not in events.FILE_ACTIONS:
            return
        try:
            await self.registry.enqueue_webhooks(self._deliveries(app, action, record))
        except Exception:  # the request that caused the event must not fail for it
            log.exception("could not enqueue webhooks for %s of %s", action, record.handle)
            return
        self.worker.wake()

    async def announce(self, app: App, action: str, handle: str, text: dict[str, Any]) -> None:
        """An event that is no file change (``fp.converse``: a video conversion ended),
        enqueued, signed and retried like the others; never raises."""
        if not app.webhooks:
            return
        now = time.time()
        event_id = _event_id()
        body = json.dumps({"id": event_id, "action": action, "timestamp": int(now), "text": text})
        try:
            await self.registry.enqueue_webhooks(
                self._to_each(app, action, handle, body, event_id, now)
            )
        except Exception:
            log.exception("could not enqueue webhooks for %s of %s", action, handle)
            return
        self.worker.wake()

    def _deliveries(self, app: App, action: str, record: FileRecord) -> list[WebhookDelivery]:
        now = time.time()
        event_id = _event_id()
        body = event_body(event_id, action, record, self.link(record), int(now))
        return self._to_each(app, action, record.handle, body, event_id, now)

    def _to_each(
        self, app: App, action: str, handle: str, body: str, event_id: int, now: float
    ) -> list[WebhookDelivery]:
        return [
            WebhookDelivery(
                id=0,
                event_id=event_id,
                api_key=app.api_key,
                url=url,
                action=action,
                handle=handle,
                body=body,
                next_attempt=now,
                created=now,
            )
            for url in dict.fromkeys(app.webhooks)
        ]

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self.worker.run(), name="webhook-worker")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self.worker.close()


def _event_id() -> int:
    return secrets.randbelow(2**53 - 1) + 1  # a safe integer in JavaScript
