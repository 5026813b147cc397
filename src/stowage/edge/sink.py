"""The core's event sink, wrapped: overwrites and deletes purge the edge caches first.

The core publishes after an operation has committed and before it answers (the handle's
new row or its absence is visible to every node), so a read reaching the origin after the
purge gets the new answer. The wrapped sink (webhooks) then gets the event as before.
"""

from __future__ import annotations

import logging
from typing import Any

from stowage.core import events
from stowage.edge.base import Purger, record_tags
from stowage.registry.base import App, FileRecord

log = logging.getLogger("stowage.edge")

#: Events after which a CDN URL answers differently.
CHANGES = frozenset({events.OVERWRITE, events.DELETE})


class PurgingSink:
    def __init__(self, inner: events.EventSink, purger: Purger) -> None:
        self.inner = inner
        self.purger = purger

    async def publish(
        self, app: App, action: str, record: FileRecord, extra: dict[str, Any]
    ) -> None:
        if action in CHANGES:
            try:
                await self.purger.purge(record_tags(record))
            except Exception:  # the write has committed: it must not fail for its purge
                log.exception("purging the edge caches for %s failed", record.handle)
        await self.inner.publish(app, action, record, extra)

    async def start(self) -> None:
        await self.purger.start()
        await self.inner.start()

    async def close(self) -> None:
        await self.inner.close()
        await self.purger.close()
