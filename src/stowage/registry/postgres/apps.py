"""Apps (``AppRows``) in the PostgreSQL registry."""

from __future__ import annotations

import json
from typing import Any

import asyncpg

from stowage import errors
from stowage.registry.base import App
from stowage.registry.postgres.store import PostgresStore, count


class PostgresApps:
    def __init__(self, store: PostgresStore) -> None:
        self.store = store

    async def create_app(self, app: App) -> None:
        try:
            await self.store.pool.execute(
                "INSERT INTO apps VALUES ($1, $2, $3, $4, $5, $6, $7)", *_app_row(app)
            )
        except asyncpg.UniqueViolationError as exc:
            raise errors.Conflict("an app with this key exists") from exc

    async def get_app(self, api_key: str) -> App | None:
        row = await self.store.pool.fetchrow("SELECT * FROM apps WHERE api_key = $1", api_key)
        return _app(row) if row else None

    async def list_apps(self) -> list[App]:
        rows = await self.store.pool.fetch("SELECT * FROM apps ORDER BY created")
        return [_app(r) for r in rows]

    async def update_app(self, app: App) -> None:
        await self.store.pool.execute(
            "UPDATE apps SET secret=$2, name=$3, security=$4, storage=$5, webhooks=$6, "
            "created=$7 WHERE api_key=$1",
            *_app_row(app),
        )

    async def delete_app(self, api_key: str) -> bool:
        status = await self.store.pool.execute("DELETE FROM apps WHERE api_key = $1", api_key)
        return count(status) > 0


def _app_row(app: App) -> tuple[Any, ...]:
    return (
        app.api_key,
        app.secret,
        app.name,
        app.security,
        json.dumps(app.storage),
        json.dumps(app.webhooks),
        app.created,
    )


def _app(row: asyncpg.Record) -> App:
    return App(
        row["api_key"],
        row["secret"],
        row["name"],
        row["security"],
        json.loads(row["storage"]),
        json.loads(row["webhooks"]),
        row["created"],
    )
