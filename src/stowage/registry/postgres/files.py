"""The handle -> stored object table (``FileRows``) in the PostgreSQL registry.

Cross-node rules are conditions in the statements: ``delete`` is one conditional
``DELETE`` (exactly one caller, on any node, sees the row go); ``update`` only moves a row
forward (``version`` must grow), so an older overwrite can never replace a newer one even
if its lock was lost with its connection.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import asyncpg

from stowage import errors
from stowage.registry.base import FileRecord
from stowage.registry.postgres.store import PostgresStore, count

COLUMNS = (
    "handle, api_key, provider, location, container, key, filename, mimetype, size, sha256, "
    "uploaded, source_url, cloud, access, version"
)
_VALUES = ", ".join(f"${i}" for i in range(1, 16))
_SET_STORED = (
    "filename=$2, mimetype=$3, size=$4, sha256=$5, uploaded=$6, source_url=$7, cloud=$8, "
    "access=$9, version=$10"
)
_STORED = f"SELECT {COLUMNS} FROM files WHERE state = 'stored'"


class PostgresFiles:
    def __init__(self, store: PostgresStore) -> None:
        self.store = store

    async def reserve(self, record: FileRecord) -> None:
        try:
            await self.store.pool.execute(
                f"INSERT INTO files ({COLUMNS}, state) VALUES ({_VALUES}, 'pending')",
                *record.values(),
            )
        except asyncpg.UniqueViolationError as exc:
            if exc.constraint_name == "files_object":
                raise errors.KeyInUse(key=record.key, container=record.container) from exc
            raise errors.Conflict("a file with this handle exists") from exc

    async def commit(self, record: FileRecord) -> None:
        status = await self.store.pool.execute(
            f"UPDATE files SET {_SET_STORED}, state = 'stored' "
            "WHERE handle = $1 AND state = 'pending'",
            *_stored_values(record),
        )
        if count(status) == 0:  # taken for abandoned (older than pending_grace_seconds)
            raise errors.Conflict(
                "the store took longer than pending_grace_seconds and was abandoned"
            )

    async def abandon(self, handle: str) -> None:
        await self.store.pool.execute(
            "DELETE FROM files WHERE handle = $1 AND state = 'pending'", handle
        )

    async def get(self, handle: str) -> FileRecord | None:
        row = await self.store.pool.fetchrow(f"{_STORED} AND handle = $1", handle)
        return _file(row) if row else None

    async def update(self, record: FileRecord) -> bool:
        # One statement: the row update and the drop of the intent it fulfils (the command
        # tag is the UPDATE's).
        status = await self.store.pool.execute(
            "WITH fulfilled AS "
            "(DELETE FROM overwrite_intents WHERE handle = $1 AND version <= $10) "
            f"UPDATE files SET {_SET_STORED} "
            "WHERE handle = $1 AND state = 'stored' AND version < $10",
            *_stored_values(record),
        )
        return count(status) > 0

    async def delete(self, handle: str) -> bool:
        status = await self.store.pool.execute(
            "DELETE FROM files WHERE handle = $1 AND state = 'stored'", handle
        )
        return count(status) > 0

    async def list_files(
        self, api_key: str, after: str | None = None, limit: int = 100
    ) -> list[FileRecord]:
        rows = await self.store.pool.fetch(
            f"{_STORED} AND api_key = $1 AND handle > $2 ORDER BY handle LIMIT $3",
            api_key,
            after or "",
            limit,
        )
        return [_file(r) for r in rows]

    async def pending(self, older_than: float) -> list[FileRecord]:
        rows = await self.store.pool.fetch(
            f"SELECT {COLUMNS} FROM files WHERE state = 'pending' AND uploaded < $1",
            older_than * 1000,
        )
        return [_file(r) for r in rows]

    async def all_files(self) -> AsyncIterator[FileRecord]:
        after = ""
        while True:
            rows = await self.store.pool.fetch(
                f"{_STORED} AND handle > $1 ORDER BY handle LIMIT 500", after
            )
            for row in rows:
                yield _file(row)
            if len(rows) < 500:
                return
            after = rows[-1]["handle"]


def _stored_values(r: FileRecord) -> tuple[Any, ...]:
    return (
        r.handle,
        r.filename,
        r.mimetype,
        r.size,
        r.sha256,
        r.uploaded,
        r.source_url,
        r.cloud,
        r.access,
        r.version,
    )


def _file(row: asyncpg.Record) -> FileRecord:
    return FileRecord(*row.values())
