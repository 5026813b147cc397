"""Overwrite intents (``IntentRows``) in the SQLite registry.

Writes run on the registry's writer thread; each function is one transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import asdict

from stowage.registry.base import OverwriteIntent
from stowage.registry.sqlite.db import SQLiteDB, transaction

SCHEMA = """
CREATE TABLE IF NOT EXISTS overwrite_intents (
    handle TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    size INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    mimetype TEXT NOT NULL,
    created REAL NOT NULL
);
"""

_COLUMNS = "handle, version, size, sha256, mimetype, created"
_SAME = "handle = :handle AND version = :version AND size = :size AND sha256 = :sha256"


class SQLiteIntents:
    def __init__(self, db: SQLiteDB) -> None:
        self.db = db

    async def intend_overwrite(self, intent: OverwriteIntent) -> bool:
        return await self.db.write(lambda conn: intend(conn, intent))

    async def overwrite_intents(self, older_than: float) -> list[OverwriteIntent]:
        return listed(self.db.reader, older_than)

    async def settle_overwrite(self, intent: OverwriteIntent, adopt: bool) -> bool:
        return await self.db.write(lambda conn: settle(conn, intent, adopt))

    async def pending_overwrite(self, handle: str) -> OverwriteIntent | None:
        found = self.db.reader.execute(
            f"SELECT {_COLUMNS} FROM overwrite_intents WHERE handle = ?", (handle,)
        ).fetchone()
        return None if found is None else OverwriteIntent(*found)


def intend(conn: sqlite3.Connection, intent: OverwriteIntent) -> bool:
    # Conditional on the row, so an overwrite whose row moved on never records an intent.
    cursor = conn.execute(
        f"INSERT INTO overwrite_intents ({_COLUMNS}) "
        "SELECT :handle, :version, :size, :sha256, :mimetype, :created "
        "WHERE EXISTS (SELECT 1 FROM files WHERE handle = :handle AND state = 'stored' "
        "AND version = :version - 1) ON CONFLICT (handle) DO UPDATE SET "
        "version = excluded.version, size = excluded.size, sha256 = excluded.sha256, "
        "mimetype = excluded.mimetype, created = excluded.created",
        asdict(intent),
    )
    return cursor.rowcount > 0


def listed(conn: sqlite3.Connection, older_than: float) -> list[OverwriteIntent]:
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM overwrite_intents WHERE created < ? ORDER BY created",
        (older_than,),
    ).fetchall()
    return [OverwriteIntent(*row) for row in rows]


def update_row(
    conn: sqlite3.Connection, update: Callable[[], int], handle: str, version: int
) -> int:
    """``update`` (the row's UPDATE) and the drop of the intent it fulfils, as one."""

    def both() -> int:
        count = update()
        conn.execute(
            "DELETE FROM overwrite_intents WHERE handle = ? AND version <= ?", (handle, version)
        )
        return count

    return transaction(conn, both)


def settle(conn: sqlite3.Connection, intent: OverwriteIntent, adopt: bool) -> bool:
    values = asdict(intent)

    def run() -> bool:
        dropped = conn.execute(f"DELETE FROM overwrite_intents WHERE {_SAME}", values).rowcount
        if not (dropped and adopt):
            return False
        cursor = conn.execute(
            "UPDATE files SET size = :size, sha256 = :sha256, mimetype = :mimetype, "
            "version = :version WHERE handle = :handle AND state = 'stored' "
            "AND version = :version - 1",
            values,
        )
        return cursor.rowcount > 0

    return transaction(conn, run)
