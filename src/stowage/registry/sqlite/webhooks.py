"""The webhook delivery log in the SQLite registry (the queue itself is ``queue.py``)."""

from __future__ import annotations

from stowage.registry.base import WebhookDelivery
from stowage.registry.queues import WEBHOOKS
from stowage.registry.sqlite.db import SQLiteDB


class SQLiteWebhookLog:
    def __init__(self, db: SQLiteDB) -> None:
        self.db = db
        self.columns = ", ".join(WEBHOOKS.columns())

    async def __call__(self, api_key: str | None, limit: int) -> list[WebhookDelivery]:
        where, params = ("WHERE api_key = ?", (api_key,)) if api_key else ("", ())
        rows = self.db.rows(
            f"SELECT {self.columns} FROM webhook_deliveries {where} ORDER BY id DESC LIMIT ?",
            (*params, limit),
        )
        return [WebhookDelivery(*r) for r in rows]
