"""The edge purge queue (``PurgeQueue``) in the SQLite registry.

A mixin of ``SQLiteRegistry``: writes run on its writer thread, so a claim (one
``UPDATE ... RETURNING``) is atomic against every other write.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any, TypeVar

from stowage.registry.base import EdgePurge

T = TypeVar("T")

SCHEMA = """
CREATE TABLE IF NOT EXISTS edge_purges (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    cache TEXT NOT NULL,
    tag TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt REAL NOT NULL DEFAULT 0,
    lease_until REAL NOT NULL DEFAULT 0,
    last_error TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL,
    claimed_by TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS edge_purges_due ON edge_purges (next_attempt);
CREATE INDEX IF NOT EXISTS edge_purges_by_tag ON edge_purges (cache, tag);
"""

COLUMNS = "id, cache, tag, attempts, next_attempt, lease_until, last_error, created"


class SQLitePurges:
    """Needs the registry's ``_write`` (writer thread) and ``_conn``/``_rows``."""

    async def _write(self, fn: Callable[[], T]) -> T:
        raise NotImplementedError  # provided by SQLiteRegistry

    def _conn(self) -> sqlite3.Connection:
        raise NotImplementedError

    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    async def enqueue_purges(self, purges: list[EdgePurge]) -> None:
        await self._write(lambda: _enqueue(self._conn(), purges))

    async def claim_purges(
        self, worker: str, now: float, lease: float, limit: int
    ) -> list[EdgePurge]:
        return await self._write(lambda: _claim(self._conn(), worker, now, lease, limit))

    async def finish_purge(
        self, purge_id: int, worker: str, *, done: bool, next_attempt: float, error: str = ""
    ) -> bool:
        return await self._write(
            lambda: _finish(self._conn(), purge_id, worker, done, next_attempt, error)
        )

    async def purge_queue_depth(self) -> int:
        return int(self._rows("SELECT count(*) FROM edge_purges")[0][0])


def _enqueue(conn: sqlite3.Connection, purges: list[EdgePurge]) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        for p in purges:
            # One waiting row per cache and tag is enough: the purge carries no content.
            conn.execute(
                "INSERT INTO edge_purges (cache, tag, next_attempt, last_error, created) "
                "SELECT ?, ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM edge_purges "
                "WHERE cache = ? AND tag = ? AND claimed_by = '')",
                (p.cache, p.tag, p.next_attempt, p.last_error, p.created, p.cache, p.tag),
            )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _claim(
    conn: sqlite3.Connection, worker: str, now: float, lease: float, limit: int
) -> list[EdgePurge]:
    rows = conn.execute(
        "UPDATE edge_purges SET claimed_by = ?, lease_until = ?, attempts = attempts + 1 "
        "WHERE id IN (SELECT id FROM edge_purges WHERE (claimed_by = '' AND next_attempt <= ?)"
        " OR (claimed_by != '' AND lease_until <= ?) ORDER BY next_attempt, id LIMIT ?)"
        f" RETURNING {COLUMNS}",
        (worker, now + lease, now, now, limit),
    ).fetchall()
    return sorted((EdgePurge(*r) for r in rows), key=lambda p: p.id)


def _finish(
    conn: sqlite3.Connection, purge_id: int, worker: str, done: bool, due: float, error: str
) -> bool:
    if done:
        sql = "DELETE FROM edge_purges WHERE id = ? AND claimed_by = ?"
        return conn.execute(sql, (purge_id, worker)).rowcount > 0
    sql = (
        "UPDATE edge_purges SET claimed_by = '', lease_until = 0, next_attempt = ?, "
        "last_error = ? WHERE id = ? AND claimed_by = ?"
    )
    return conn.execute(sql, (due, error, purge_id, worker)).rowcount > 0
