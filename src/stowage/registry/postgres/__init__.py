"""PostgreSQL registry: the shared state of many stateless nodes, one object per concern
on one store (``store.py``). Cross-node rules are enforced by the database, not by a node
(see each concern's module).
"""

from __future__ import annotations

from stowage.registry.composed import ComposedRegistry
from stowage.registry.postgres import limits
from stowage.registry.postgres.apps import PostgresApps
from stowage.registry.postgres.files import PostgresFiles
from stowage.registry.postgres.intents import PostgresIntents
from stowage.registry.postgres.locks import PostgresLocks
from stowage.registry.postgres.queue import PostgresQueue
from stowage.registry.postgres.store import PostgresStore
from stowage.registry.postgres.uploads import PostgresUploads
from stowage.registry.postgres.webhooks import PostgresWebhookLog
from stowage.registry.queues import (
    PURGES,
    VIDEO_JOBS,
    WEBHOOKS,
    EdgePurges,
    VideoJobs,
    WebhookDeliveries,
)


class PostgresRegistry(ComposedRegistry):
    def __init__(self, dsn: str, pool_size: int = 10, lock_pool_size: int = 10) -> None:
        store = PostgresStore(dsn, pool_size, lock_pool_size)
        super().__init__(
            store,
            PostgresApps(store),
            PostgresFiles(store),
            PostgresIntents(store),
            PostgresLocks(store),
            PostgresUploads(store),
            WebhookDeliveries(PostgresQueue(store, WEBHOOKS), PostgresWebhookLog(store)),
            EdgePurges(PostgresQueue(store, PURGES)),
            VideoJobs(PostgresQueue(store, VIDEO_JOBS)),
        )
        self.upgrade, self.schema_version = store.upgrade, store.schema_version

    async def take_token(self, key: str, rate: float, burst: float) -> tuple[float, bool]:
        """Shared token bucket (``SharedLimits``): (tokens left, whether one was taken)."""
        store = self.store
        assert isinstance(store, PostgresStore)
        return await limits.take(store.pool, key, rate, burst)
