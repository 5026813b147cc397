"""The webhook delivery log in the PostgreSQL registry (the queue itself is ``queue.py``)."""

from __future__ import annotations

from stowage.registry.base import WebhookDelivery
from stowage.registry.postgres.store import PostgresStore
from stowage.registry.queues import WEBHOOKS


class PostgresWebhookLog:
    def __init__(self, store: PostgresStore) -> None:
        self.store = store
        self.select = f"SELECT {', '.join(WEBHOOKS.columns())} FROM webhook_deliveries"

    async def __call__(self, api_key: str | None, limit: int) -> list[WebhookDelivery]:
        if api_key:
            rows = await self.store.pool.fetch(
                f"{self.select} WHERE api_key = $1 ORDER BY id DESC LIMIT $2", api_key, limit
            )
        else:
            rows = await self.store.pool.fetch(f"{self.select} ORDER BY id DESC LIMIT $1", limit)
        return [WebhookDelivery(*r.values()) for r in rows]
