"""Periodic clean-up of what a node that died left behind, on a shared registry.

One node cleans its own leftovers when it starts; with several nodes a dead node may
never come back, so every node runs this loop and, one at a time (``exclusive``), removes
pending rows older than ``pending_grace_seconds`` with their objects and settles the
overwrites it interrupted (``core/overwrites.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from stowage.config import Settings
from stowage.registry.base import Locks

log = logging.getLogger("stowage.core")


class Janitor:
    def __init__(
        self, settings: Settings, registry: Locks, clean: Callable[[], Awaitable[int]]
    ) -> None:
        self.settings = settings
        self.registry = registry
        self.clean = clean
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self.settings.registry_shared and self._task is None:
            self._task = asyncio.create_task(self._loop())

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _loop(self) -> None:
        interval = max(1.0, min(300.0, self.settings.pending_grace_seconds / 4))
        while True:
            await asyncio.sleep(interval)
            try:
                async with self.registry.exclusive("pending-sweep") as mine:
                    if mine and (cleaned := await self.clean()):
                        log.info("cleaned %s stores or overwrites left by a dead node", cleaned)
            except Exception:
                log.warning("cleaning abandoned stores failed", exc_info=True)
