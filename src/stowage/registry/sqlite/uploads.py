"""Multipart upload sessions and their parts (``UploadRows``) in the SQLite registry.

Writes run on the registry's writer thread; each function is one transaction.
"""

from __future__ import annotations

import sqlite3
from dataclasses import astuple
from typing import Any

from stowage.registry.base import UploadPart, UploadSession
from stowage.registry.sqlite.db import SQLiteDB

SCHEMA = """
CREATE TABLE IF NOT EXISTS uploads (
    upload_id TEXT PRIMARY KEY,
    api_key TEXT NOT NULL,
    provider TEXT NOT NULL,
    filename TEXT NOT NULL,
    mimetype TEXT NOT NULL,
    size INTEGER NOT NULL,
    path TEXT,
    container TEXT,
    access TEXT NOT NULL,
    part_key TEXT NOT NULL,
    created REAL NOT NULL,
    state TEXT NOT NULL DEFAULT 'open',
    handle TEXT
);
CREATE INDEX IF NOT EXISTS uploads_by_age ON uploads (created);
CREATE TABLE IF NOT EXISTS upload_parts (
    upload_id TEXT NOT NULL,
    part INTEGER NOT NULL,
    "offset" INTEGER NOT NULL,
    size INTEGER NOT NULL,
    md5 TEXT NOT NULL,
    etag TEXT NOT NULL,
    PRIMARY KEY (upload_id, part, "offset")
);
"""

_SESSION = (
    "upload_id, api_key, provider, filename, mimetype, size, path, container, access, "
    "part_key, created, state, handle"
)
_PART = 'upload_id, part, "offset", size, md5, etag'


class SQLiteUploads:
    def __init__(self, db: SQLiteDB) -> None:
        self.db = db

    async def create_upload(self, session: UploadSession) -> None:
        await self.db.write(lambda conn: create(conn, session))

    async def get_upload(self, upload_id: str) -> UploadSession | None:
        return get(self.db.reader, upload_id)

    async def put_upload_part(self, part: UploadPart) -> None:
        await self.db.write(lambda conn: put_part(conn, part))

    async def upload_parts(self, upload_id: str) -> list[UploadPart]:
        return parts(self.db.reader, upload_id)

    async def finish_upload(self, upload_id: str, handle: str) -> bool:
        return await self.db.write(lambda conn: finish(conn, upload_id, handle))

    async def delete_upload(self, upload_id: str) -> None:
        await self.db.write(lambda conn: delete(conn, upload_id))

    async def expired_uploads(self, created_before: float) -> list[UploadSession]:
        return expired(self.db.reader, created_before)


def create(conn: sqlite3.Connection, session: UploadSession) -> None:
    conn.execute(f"INSERT INTO uploads ({_SESSION}) VALUES ({_marks(13)})", astuple(session))


def get(conn: sqlite3.Connection, upload_id: str) -> UploadSession | None:
    rows = conn.execute(
        f"SELECT {_SESSION} FROM uploads WHERE upload_id = ?", (upload_id,)
    ).fetchall()
    return UploadSession(*rows[0]) if rows else None


def put_part(conn: sqlite3.Connection, part: UploadPart) -> None:
    conn.execute(
        f"INSERT OR REPLACE INTO upload_parts ({_PART}) VALUES ({_marks(6)})", astuple(part)
    )


def parts(conn: sqlite3.Connection, upload_id: str) -> list[UploadPart]:
    rows = conn.execute(
        f'SELECT {_PART} FROM upload_parts WHERE upload_id = ? ORDER BY part, "offset"',
        (upload_id,),
    ).fetchall()
    return [UploadPart(*r) for r in rows]


def finish(conn: sqlite3.Connection, upload_id: str, handle: str) -> bool:
    return _transaction(
        conn,
        lambda: (
            conn.execute(
                "UPDATE uploads SET state = 'complete', handle = ? "
                "WHERE upload_id = ? AND state = 'open'",
                (handle, upload_id),
            ).rowcount
            > 0
            and _drop_parts(conn, upload_id)
        ),
    )


def delete(conn: sqlite3.Connection, upload_id: str) -> None:
    def run() -> bool:
        conn.execute("DELETE FROM uploads WHERE upload_id = ?", (upload_id,))
        return _drop_parts(conn, upload_id)

    _transaction(conn, run)


def expired(conn: sqlite3.Connection, created_before: float) -> list[UploadSession]:
    rows = conn.execute(
        f"SELECT {_SESSION} FROM uploads WHERE created < ? ORDER BY created", (created_before,)
    ).fetchall()
    return [UploadSession(*r) for r in rows]


def _drop_parts(conn: sqlite3.Connection, upload_id: str) -> bool:
    conn.execute("DELETE FROM upload_parts WHERE upload_id = ?", (upload_id,))
    return True


def _transaction(conn: sqlite3.Connection, body: Any) -> bool:
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = bool(body())
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return result


def _marks(count: int) -> str:
    return ", ".join("?" * count)
