"""Multipart upload sessions and their parts (``UploadRows``) in the PostgreSQL registry.

Parts may arrive at any node and the upload may be completed by any node: every piece
is a row, and ``finish`` is one conditional update (``state = 'open'``), so exactly one
completion wins however many nodes try.
"""

from __future__ import annotations

from dataclasses import astuple

import asyncpg

from stowage.registry.base import UploadPart, UploadSession
from stowage.registry.postgres.store import PostgresStore

_SESSION = (
    "upload_id, api_key, provider, filename, mimetype, size, path, container, access, "
    "part_key, created, state, handle"
)
_PART = 'upload_id, part, "offset", size, md5, etag'


class PostgresUploads:
    def __init__(self, store: PostgresStore) -> None:
        self.store = store

    async def create_upload(self, session: UploadSession) -> None:
        await create(self.store.pool, session)

    async def get_upload(self, upload_id: str) -> UploadSession | None:
        return await get(self.store.pool, upload_id)

    async def put_upload_part(self, part: UploadPart) -> None:
        await put_part(self.store.pool, part)

    async def upload_parts(self, upload_id: str) -> list[UploadPart]:
        return await parts(self.store.pool, upload_id)

    async def finish_upload(self, upload_id: str, handle: str) -> bool:
        return await finish(self.store.pool, upload_id, handle)

    async def delete_upload(self, upload_id: str) -> None:
        await delete(self.store.pool, upload_id)

    async def expired_uploads(self, created_before: float) -> list[UploadSession]:
        return await expired(self.store.pool, created_before)


def _marks(count: int) -> str:
    return ", ".join(f"${i}" for i in range(1, count + 1))


async def create(pool: asyncpg.Pool, session: UploadSession) -> None:
    await pool.execute(f"INSERT INTO uploads ({_SESSION}) VALUES ({_marks(13)})", *astuple(session))


async def get(pool: asyncpg.Pool, upload_id: str) -> UploadSession | None:
    row = await pool.fetchrow(f"SELECT {_SESSION} FROM uploads WHERE upload_id = $1", upload_id)
    return UploadSession(*row.values()) if row else None


async def put_part(pool: asyncpg.Pool, part: UploadPart) -> None:
    await pool.execute(
        f"INSERT INTO upload_parts ({_PART}) VALUES ({_marks(6)}) "
        'ON CONFLICT (upload_id, part, "offset") '
        "DO UPDATE SET size = EXCLUDED.size, md5 = EXCLUDED.md5, etag = EXCLUDED.etag",
        *astuple(part),
    )


async def parts(pool: asyncpg.Pool, upload_id: str) -> list[UploadPart]:
    rows = await pool.fetch(
        f'SELECT {_PART} FROM upload_parts WHERE upload_id = $1 ORDER BY part, "offset"',
        upload_id,
    )
    return [UploadPart(*r.values()) for r in rows]


async def finish(pool: asyncpg.Pool, upload_id: str, handle: str) -> bool:
    async with pool.acquire() as conn, conn.transaction():
        status = await conn.execute(
            "UPDATE uploads SET state = 'complete', handle = $1 "
            "WHERE upload_id = $2 AND state = 'open'",
            handle,
            upload_id,
        )
        if not str(status).endswith(" 1"):
            return False
        await conn.execute("DELETE FROM upload_parts WHERE upload_id = $1", upload_id)
        return True


async def delete(pool: asyncpg.Pool, upload_id: str) -> None:
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("DELETE FROM uploads WHERE upload_id = $1", upload_id)
        await conn.execute("DELETE FROM upload_parts WHERE upload_id = $1", upload_id)


async def expired(pool: asyncpg.Pool, created_before: float) -> list[UploadSession]:
    rows = await pool.fetch(
        f"SELECT {_SESSION} FROM uploads WHERE created < $1 ORDER BY created", created_before
    )
    return [UploadSession(*r.values()) for r in rows]
