"""Overwrite intents (``IntentRows``) in the PostgreSQL registry.

Every rule is a condition in the statement, so nodes racing on one handle cannot break
it: an intent is recorded only while the row is at the version the overwrite started
from, and adopted only while it is still there and unchanged.
"""

from __future__ import annotations

from dataclasses import astuple

import asyncpg

from stowage.registry.base import OverwriteIntent
from stowage.registry.postgres.store import PostgresStore

_COLUMNS = "handle, version, size, sha256, mimetype, created"
_SAME = "handle = $1 AND version = $2 AND size = $3 AND sha256 = $4"


class PostgresIntents:
    def __init__(self, store: PostgresStore) -> None:
        self.store = store

    async def intend_overwrite(self, intent: OverwriteIntent) -> bool:
        return await intend(self.store.pool, intent)

    async def overwrite_intents(self, older_than: float) -> list[OverwriteIntent]:
        return await listed(self.store.pool, older_than)

    async def settle_overwrite(self, intent: OverwriteIntent, adopt: bool) -> bool:
        return await settle(self.store.pool, intent, adopt)

    async def pending_overwrite(self, handle: str) -> OverwriteIntent | None:
        found = await self.store.pool.fetchrow(
            f"SELECT {_COLUMNS} FROM overwrite_intents WHERE handle = $1", handle
        )
        return None if found is None else OverwriteIntent(*found.values())


async def intend(pool: asyncpg.Pool, intent: OverwriteIntent) -> bool:
    status = await pool.execute(
        f"INSERT INTO overwrite_intents ({_COLUMNS}) SELECT $1, $2, $3, $4, $5, $6 "
        "WHERE EXISTS (SELECT 1 FROM files WHERE handle = $1 AND state = 'stored' "
        "AND version = $2 - 1) ON CONFLICT (handle) DO UPDATE SET version = excluded.version, "
        "size = excluded.size, sha256 = excluded.sha256, mimetype = excluded.mimetype, "
        "created = excluded.created",
        *astuple(intent),
    )
    return _count(status) > 0


async def listed(pool: asyncpg.Pool, older_than: float) -> list[OverwriteIntent]:
    rows = await pool.fetch(
        f"SELECT {_COLUMNS} FROM overwrite_intents WHERE created < $1 ORDER BY created",
        older_than,
    )
    return [OverwriteIntent(*row.values()) for row in rows]


async def settle(pool: asyncpg.Pool, intent: OverwriteIntent, adopt: bool) -> bool:
    same = (intent.handle, intent.version, intent.size, intent.sha256)
    async with pool.acquire() as conn, conn.transaction():
        dropped = _count(await conn.execute(f"DELETE FROM overwrite_intents WHERE {_SAME}", *same))
        if not (dropped and adopt):
            return False
        status = await conn.execute(
            "UPDATE files SET size = $3, sha256 = $4, mimetype = $5, version = $2 "
            "WHERE handle = $1 AND state = 'stored' AND version = $2 - 1",
            *same,
            intent.mimetype,
        )
        return _count(status) > 0


def _count(status: str) -> int:
    """asyncpg returns the command tag, e.g. ``INSERT 0 1``."""
    return int(status.rsplit(" ", 1)[-1])
