"""What a crash leaves behind, undone: at start-up (``recover``) and, on a shared
registry, by every node's janitor (``clean_up``, core/janitor.py).

A store reserves its row before writing, so a crash leaves a pending row and perhaps its
object; an overwrite records its intent before the provider commits (core/overwrites.py);
providers may leave temporary state (``Recovers``).
"""

from __future__ import annotations

import asyncio
import logging
import time

from stowage import errors
from stowage.config import Settings
from stowage.core import overwrites
from stowage.core.providers import Providers
from stowage.registry.base import RecoveryRows
from stowage.storage.base import Recovers

log = logging.getLogger("stowage.core")
SWEEP_TIMEOUT = 30.0


class Recovery:
    def __init__(self, settings: Settings, registry: RecoveryRows, providers: Providers) -> None:
        self.settings = settings
        self.registry = registry
        self.providers = providers

    async def recover(self) -> int:
        """Undo stores that a crash interrupted (pending rows and their objects, temp files)
        and settle the overwrites it interrupted."""
        cleaned = await self.clean_up()
        for provider in [*self.providers.local_defaults(), *await self.providers.configured()]:
            if isinstance(provider, Recovers):
                cleaned += await _sweep(provider)
        return cleaned

    async def clean_up(self) -> int:
        """What crashed writers left in the registry: abandoned stores, unsettled overwrites.
        Overwrite intents need no grace: each is settled under its handle's lock, which a
        live overwrite holds until its row update has dropped its intent."""
        return await self.clean_pending() + await overwrites.settle_all(
            self.registry, self.providers, time.time()
        )

    async def clean_pending(self) -> int:
        """Removes abandoned pending rows and whatever their stores wrote."""
        cleaned = 0
        for record in await self.registry.pending(older_than=self._abandoned_before()):
            app = await self.registry.get_app(record.api_key)
            if app is not None and not record.cloud:
                try:
                    provider = self.providers.provider_for(app, record.provider)
                    await provider.delete(record.container, record.key)
                except errors.StowageError:
                    pass
            await self.registry.abandon(record.handle)
            cleaned += 1
        return cleaned

    def _abandoned_before(self) -> float:
        """One node owns a SQLite registry, so at its start every pending row is abandoned.
        A shared registry's pending rows may be live uploads on other nodes: only those
        older than ``pending_grace_seconds`` are taken as left by a crash."""
        if self.settings.registry_shared:
            return time.time() - self.settings.pending_grace_seconds
        return time.time()


async def _sweep(provider: Recovers) -> int:
    """Start-up must not hang on a provider that is down: sweep it later instead."""
    try:
        async with asyncio.timeout(SWEEP_TIMEOUT):
            return await provider.sweep_temporary()
    except (errors.StowageError, TimeoutError):
        log.warning("could not sweep temporary state of a provider", exc_info=True)
        return 0
