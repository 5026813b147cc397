"""File events (store, upload, overwrite, delete) for whoever wants them (webhooks).

The core publishes after an operation has committed; a sink must never delay or fail the
request that caused the event, so ``publish`` only enqueues.
"""

from __future__ import annotations

from typing import Any, Protocol

from stowage.registry.base import App, FileRecord

#: Event names, as the Filestack webhooks call them.
STORE = "fp.upload"
OVERWRITE = "fp.overwrite"
DELETE = "fp.delete"


class EventSink(Protocol):
    async def publish(
        self, app: App, action: str, record: FileRecord, extra: dict[str, Any]
    ) -> None:
        """Enqueue; never raise for delivery problems, never block on the network."""
        ...

    async def start(self) -> None:
        """Called when the service starts (e.g. to start a delivery worker)."""
        ...

    async def close(self) -> None: ...


class NullSink:
    async def publish(
        self, app: App, action: str, record: FileRecord, extra: dict[str, Any]
    ) -> None:
        return None

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None
