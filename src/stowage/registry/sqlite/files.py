"""The handle -> stored object table (``FileRows``) in the SQLite registry."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from typing import Any

from stowage import errors
from stowage.registry.base import FileRecord
from stowage.registry.sqlite import intents
from stowage.registry.sqlite.db import SQLiteDB

SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    handle TEXT PRIMARY KEY,
    api_key TEXT NOT NULL,
    provider TEXT NOT NULL,
    location TEXT NOT NULL,
    container TEXT NOT NULL,
    key TEXT NOT NULL,
    filename TEXT NOT NULL,
    mimetype TEXT NOT NULL,
    size INTEGER NOT NULL DEFAULT 0,
    sha256 TEXT NOT NULL DEFAULT '',
    uploaded REAL NOT NULL,
    source_url TEXT,
    cloud INTEGER NOT NULL DEFAULT 0,
    access TEXT NOT NULL DEFAULT 'private',
    version INTEGER NOT NULL DEFAULT 1,
    state TEXT NOT NULL DEFAULT 'pending'
);
CREATE UNIQUE INDEX IF NOT EXISTS files_object
    ON files (api_key, provider, container, key);
CREATE INDEX IF NOT EXISTS files_by_app ON files (api_key, handle);
"""

COLUMNS = (
    "handle, api_key, provider, location, container, key, filename, mimetype, size, sha256, "
    "uploaded, source_url, cloud, access, version"
)
_STORED = f"SELECT {COLUMNS} FROM files WHERE state = 'stored'"


class SQLiteFiles:
    def __init__(self, db: SQLiteDB) -> None:
        self.db = db

    async def reserve(self, record: FileRecord) -> None:
        def insert(conn: sqlite3.Connection) -> None:
            try:
                conn.execute(
                    f"INSERT INTO files ({COLUMNS}, state) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending')",
                    record.values(),
                )
            except sqlite3.IntegrityError as exc:
                raise errors.KeyInUse(key=record.key, container=record.container) from exc

        await self.db.write(insert)

    async def commit(self, record: FileRecord) -> None:
        await self.db.write(lambda conn: _update_row(conn, record, stored_only=False))

    async def abandon(self, handle: str) -> None:
        await self.db.execute("DELETE FROM files WHERE handle = ? AND state = 'pending'", (handle,))

    async def get(self, handle: str) -> FileRecord | None:
        rows = self.db.rows(f"{_STORED} AND handle = ?", (handle,))
        return _file(rows[0]) if rows else None

    async def update(self, record: FileRecord) -> bool:
        def both(conn: sqlite3.Connection) -> int:
            return intents.update_row(
                conn, lambda: _update_row(conn, record, True), record.handle, record.version
            )

        return await self.db.write(both) > 0

    async def delete(self, handle: str) -> bool:
        sql = "DELETE FROM files WHERE handle = ? AND state = 'stored'"
        return await self.db.execute(sql, (handle,)) > 0

    async def list_files(
        self, api_key: str, after: str | None = None, limit: int = 100
    ) -> list[FileRecord]:
        rows = self.db.rows(
            f"{_STORED} AND api_key = ? AND handle > ? ORDER BY handle LIMIT ?",
            (api_key, after or "", limit),
        )
        return [_file(r) for r in rows]

    async def pending(self, older_than: float) -> list[FileRecord]:
        rows = self.db.rows(
            f"SELECT {COLUMNS} FROM files WHERE state = 'pending' AND uploaded < ?",
            (older_than * 1000,),
        )
        return [_file(r) for r in rows]

    async def all_files(self) -> AsyncIterator[FileRecord]:
        after = ""
        while True:
            rows = self.db.rows(f"{_STORED} AND handle > ? ORDER BY handle LIMIT 500", (after,))
            for row in rows:
                yield _file(row)
            if len(rows) < 500:
                return
            after = rows[-1][0]


def _update_row(conn: sqlite3.Connection, record: FileRecord, stored_only: bool) -> int:
    row = record.values()
    where = "handle = ?" + (" AND state = 'stored'" if stored_only else "")
    return conn.execute(
        "UPDATE files SET filename=?, mimetype=?, size=?, sha256=?, uploaded=?, "
        f"source_url=?, cloud=?, access=?, version=?, state = 'stored' WHERE {where}",
        (*row[6:], record.handle),
    ).rowcount


def _file(row: tuple[Any, ...]) -> FileRecord:
    values = list(row)
    values[12] = bool(values[12])
    return FileRecord(*values)
