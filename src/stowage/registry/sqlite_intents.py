"""SQL of overwrite intents (``OverwriteIntent``) in the SQLite registry.

Writes run on the registry's writer thread; each function is one transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import asdict
from typing import TypeVar

from stowage.registry.base import OverwriteIntent

T = TypeVar("T")

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


def transaction(conn: sqlite3.Connection, body: Callable[[], T]) -> T:
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = body()
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return result
