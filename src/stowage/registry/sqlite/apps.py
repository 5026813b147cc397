"""Apps (``AppRows``) in the SQLite registry."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from stowage import errors
from stowage.registry.base import App
from stowage.registry.sqlite.db import SQLiteDB

SCHEMA = """
CREATE TABLE IF NOT EXISTS apps (
    api_key TEXT PRIMARY KEY,
    secret TEXT NOT NULL,
    name TEXT NOT NULL DEFAULT '',
    security INTEGER NOT NULL DEFAULT 0,
    storage TEXT NOT NULL DEFAULT '{}',
    webhooks TEXT NOT NULL DEFAULT '[]',
    created REAL NOT NULL
);
"""


class SQLiteApps:
    def __init__(self, db: SQLiteDB) -> None:
        self.db = db

    async def create_app(self, app: App) -> None:
        def insert(conn: sqlite3.Connection) -> None:
            try:
                conn.execute("INSERT INTO apps VALUES (?, ?, ?, ?, ?, ?, ?)", _app_row(app))
            except sqlite3.IntegrityError as exc:
                raise errors.Conflict("an app with this key exists") from exc

        await self.db.write(insert)

    async def get_app(self, api_key: str) -> App | None:
        rows = self.db.rows("SELECT * FROM apps WHERE api_key = ?", (api_key,))
        return _app(rows[0]) if rows else None

    async def list_apps(self) -> list[App]:
        return [_app(r) for r in self.db.rows("SELECT * FROM apps ORDER BY created")]

    async def update_app(self, app: App) -> None:
        row = _app_row(app)
        await self.db.execute(
            "UPDATE apps SET secret=?, name=?, security=?, storage=?, webhooks=?, created=? "
            "WHERE api_key=?",
            (*row[1:], row[0]),
        )

    async def delete_app(self, api_key: str) -> bool:
        return await self.db.execute("DELETE FROM apps WHERE api_key = ?", (api_key,)) > 0


def _app_row(app: App) -> tuple[Any, ...]:
    return (
        app.api_key,
        app.secret,
        app.name,
        int(app.security),
        json.dumps(app.storage),
        json.dumps(app.webhooks),
        app.created,
    )


def _app(row: tuple[Any, ...]) -> App:
    key, secret, name, security, storage, webhooks, created = row
    return App(
        key, secret, name, bool(security), json.loads(storage), json.loads(webhooks), created
    )
