"""The one change path: every committed change of a file or an app, told to every sink.

A write (``core/service.py``, ``core/apps.py``) takes two steps after its registry change
has committed and before it answers:

1. ``Changes.purge``: the cached answers the change made wrong are removed from the cache
   targets (the edge, ``stowage/edge``). The answer waits for it, bounded by the targets'
   timeout, so a client that reads after the answer never gets old bytes from a cache;
   what a target does not acknowledge in time is queued and sent later.
2. ``Changes.publish``: every sink hears of it (webhooks, the derivative cache, the edge's
   later echo). A sink only enqueues or drops in-process state: it never blocks on the
   network and never fails the write that caused the change.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from stowage.registry.base import App, FileRecord

log = logging.getLogger("stowage.core")

#: File changes, named as the Filestack webhooks name them.
STORE = "fp.upload"
OVERWRITE = "fp.overwrite"
DELETE = "fp.delete"
#: App changes (no webhook is sent for them).
APP_CREATE = "app.create"
APP_UPDATE = "app.update"
APP_DELETE = "app.delete"
FILE_ACTIONS = frozenset({STORE, OVERWRITE, DELETE})


@dataclass(frozen=True)
class Change:
    """One committed change. ``app`` is the app as it is now (as it was, once deleted)."""

    action: str
    app: App
    record: FileRecord | None = None  # a file change: its row now (a delete: the removed row)
    previous: FileRecord | None = None  # an overwrite: the row it replaced
    previous_app: App | None = None  # an app update: the app before it
    extra: Mapping[str, Any] = field(default_factory=dict)


class ChangeSink(Protocol):
    async def publish(self, change: Change) -> None:
        """Enqueue; never raise for delivery problems, never block on the network."""
        ...


class CachePurge(Protocol):
    async def purge(self, change: Change) -> None:
        """Removes what ``change`` made stale from every cache before returning, each
        cache bounded by a timeout; queues what is not acknowledged. Never raises."""
        ...


class Changes:
    def __init__(self, purger: CachePurge | None = None, sinks: Sequence[ChangeSink] = ()) -> None:
        self.purger = purger
        self.sinks = list(sinks)

    def add(self, sink: ChangeSink) -> None:
        self.sinks.append(sink)

    async def purge(self, change: Change) -> None:
        if self.purger is None:
            return
        try:
            await self.purger.purge(change)
        except Exception:  # the change has committed: the write must not fail for its purge
            log.exception("purging the caches after %s failed", change.action)

    async def publish(self, change: Change) -> None:
        for sink in self.sinks:
            try:
                await sink.publish(change)
            except Exception:  # one sink's failure must not fail the write or starve the rest
                log.exception("a change sink failed on %s", change.action)
