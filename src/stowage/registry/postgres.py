"""PostgreSQL registry: the shared state of many stateless nodes.

Cross-node rules are enforced by the database, not by a node:

- ``delete`` is one conditional ``DELETE``: exactly one caller, on any node, sees the row go.
- ``update`` only moves a row forward (``version`` must grow), so an older overwrite can
  never replace a newer one even if its lock was lost with its connection.
- ``handle_lock`` is a session advisory lock on a hash of the handle, held on a connection
  of its own pool for the lock's duration; waiters on one node queue on an in-process lock
  first, so a node spends at most one connection per locked handle. Lock connections never
  come from the query pool: a holder always finds a connection for its own queries.

The schema is created and upgraded by ``stowage db upgrade`` (``registry/migrate.py``);
``open`` refuses a schema version this code does not know.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg

from stowage import errors
from stowage.registry import (
    migrate,
    postgres_intents,
    postgres_limits,
    postgres_uploads,
    postgres_webhooks,
)
from stowage.registry.base import (
    App,
    FileRecord,
    OverwriteIntent,
    UploadPart,
    UploadSession,
    WebhookDelivery,
)
from stowage.registry.postgres_purges import PostgresPurges

FILE_COLUMNS = (
    "handle, api_key, provider, location, container, key, filename, mimetype, size, sha256, "
    "uploaded, source_url, cloud, access, version"
)
_FILE_VALUES = ", ".join(f"${i}" for i in range(1, 16))
_SET_STORED = (
    "filename=$2, mimetype=$3, size=$4, sha256=$5, uploaded=$6, source_url=$7, cloud=$8, "
    "access=$9, version=$10"
)
_CONNECT_ERRORS = (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError)


class PostgresRegistry(PostgresPurges):
    def __init__(self, dsn: str, pool_size: int = 10, lock_pool_size: int = 10) -> None:
        self.dsn = dsn
        self.pool_size = pool_size
        self.lock_pool_size = lock_pool_size
        self._pool: asyncpg.Pool | None = None
        self._lock_pool: asyncpg.Pool | None = None
        self._local: dict[str, tuple[asyncio.Lock, int]] = {}

    # -- lifecycle -------------------------------------------------------------
    async def open(self) -> None:
        """Connects and checks the schema; never creates or changes it."""
        self._pool = await self._create_pool(self.pool_size)
        try:
            migrate.check_current(await self._version())
            self._lock_pool = await self._create_pool(self.lock_pool_size)
        except BaseException:
            await self.close()
            raise

    async def _create_pool(self, size: int) -> asyncpg.Pool:
        try:
            pool = await asyncpg.create_pool(
                self.dsn, min_size=1, max_size=size, command_timeout=60, timeout=10
            )
        except _CONNECT_ERRORS as exc:
            raise errors.RegistryUnavailable(f"cannot reach PostgreSQL: {_why(exc)}") from exc
        assert pool is not None
        return pool

    async def close(self) -> None:
        for pool in (self._lock_pool, self._pool):
            if pool is not None:
                await pool.close()
        self._pool = self._lock_pool = None

    async def upgrade(self) -> list[str]:
        """Applies missing migrations (``stowage db upgrade``); usable before ``open``."""
        conn = await self._connect()
        try:
            return await migrate.upgrade(conn)
        finally:
            await conn.close()

    async def schema_version(self) -> int:
        conn = await self._connect()
        try:
            return await migrate.current_version(conn)
        finally:
            await conn.close()

    async def _connect(self) -> asyncpg.Connection:
        try:
            return await asyncpg.connect(self.dsn, timeout=10)
        except _CONNECT_ERRORS as exc:
            raise errors.RegistryUnavailable(f"cannot reach PostgreSQL: {_why(exc)}") from exc

    async def ping(self) -> None:
        """Readiness: the database answers and its schema is not older than this node's.
        A newer one is fine once running (migrations only add, so a rolling upgrade keeps
        old nodes serving); only ``open`` refuses a schema the node does not know."""
        migrate.check_not_older(await self._version())

    async def _version(self) -> int:
        try:
            async with self.pool.acquire() as conn:
                return await migrate.current_version(conn)
        except _CONNECT_ERRORS as exc:
            raise errors.RegistryUnavailable(f"PostgreSQL does not answer: {_why(exc)}") from exc

    @property
    def pool(self) -> asyncpg.Pool:
        if self._pool is None:
            raise errors.RegistryUnavailable("the registry is not open")
        return self._pool

    # -- apps ------------------------------------------------------------------
    async def create_app(self, app: App) -> None:
        try:
            await self.pool.execute(
                "INSERT INTO apps VALUES ($1, $2, $3, $4, $5, $6, $7)", *_app_row(app)
            )
        except asyncpg.UniqueViolationError as exc:
            raise errors.Conflict("an app with this key exists") from exc

    async def get_app(self, api_key: str) -> App | None:
        row = await self.pool.fetchrow("SELECT * FROM apps WHERE api_key = $1", api_key)
        return _app(row) if row else None

    async def list_apps(self) -> list[App]:
        return [_app(r) for r in await self.pool.fetch("SELECT * FROM apps ORDER BY created")]

    async def update_app(self, app: App) -> None:
        await self.pool.execute(
            "UPDATE apps SET secret=$2, name=$3, security=$4, storage=$5, webhooks=$6, "
            "created=$7 WHERE api_key=$1",
            *_app_row(app),
        )

    async def delete_app(self, api_key: str) -> bool:
        status = await self.pool.execute("DELETE FROM apps WHERE api_key = $1", api_key)
        return _count(status) > 0

    # -- files -----------------------------------------------------------------
    async def reserve(self, record: FileRecord) -> None:
        try:
            await self.pool.execute(
                f"INSERT INTO files ({FILE_COLUMNS}, state) VALUES ({_FILE_VALUES}, 'pending')",
                *record.values(),
            )
        except asyncpg.UniqueViolationError as exc:
            if exc.constraint_name == "files_object":
                raise errors.KeyInUse(key=record.key, container=record.container) from exc
            raise errors.Conflict("a file with this handle exists") from exc

    async def commit(self, record: FileRecord) -> None:
        status = await self.pool.execute(
            f"UPDATE files SET {_SET_STORED}, state = 'stored' "
            "WHERE handle = $1 AND state = 'pending'",
            *_stored_values(record),
        )
        if _count(status) == 0:  # taken for abandoned (older than pending_grace_seconds)
            raise errors.Conflict(
                "the store took longer than pending_grace_seconds and was abandoned"
            )

    async def abandon(self, handle: str) -> None:
        await self.pool.execute("DELETE FROM files WHERE handle = $1 AND state = 'pending'", handle)

    async def get(self, handle: str) -> FileRecord | None:
        row = await self.pool.fetchrow(
            f"SELECT {FILE_COLUMNS} FROM files WHERE handle = $1 AND state = 'stored'", handle
        )
        return _file(row) if row else None

    async def update(self, record: FileRecord) -> bool:
        # One statement: the row update and the drop of the intent it fulfils (the command
        # tag is the UPDATE's).
        status = await self.pool.execute(
            "WITH fulfilled AS "
            "(DELETE FROM overwrite_intents WHERE handle = $1 AND version <= $10) "
            f"UPDATE files SET {_SET_STORED} "
            "WHERE handle = $1 AND state = 'stored' AND version < $10",
            *_stored_values(record),
        )
        return _count(status) > 0

    async def delete(self, handle: str) -> bool:
        status = await self.pool.execute(
            "DELETE FROM files WHERE handle = $1 AND state = 'stored'", handle
        )
        return _count(status) > 0

    async def list_files(
        self, api_key: str, after: str | None = None, limit: int = 100
    ) -> list[FileRecord]:
        rows = await self.pool.fetch(
            f"SELECT {FILE_COLUMNS} FROM files WHERE api_key = $1 AND state = 'stored' "
            "AND handle > $2 ORDER BY handle LIMIT $3",
            api_key,
            after or "",
            limit,
        )
        return [_file(r) for r in rows]

    async def pending(self, older_than: float) -> list[FileRecord]:
        rows = await self.pool.fetch(
            f"SELECT {FILE_COLUMNS} FROM files WHERE state = 'pending' AND uploaded < $1",
            older_than * 1000,
        )
        return [_file(r) for r in rows]

    async def all_files(self) -> AsyncIterator[FileRecord]:
        after = ""
        while True:
            rows = await self.pool.fetch(
                f"SELECT {FILE_COLUMNS} FROM files WHERE state = 'stored' AND handle > $1 "
                "ORDER BY handle LIMIT 500",
                after,
            )
            for row in rows:
                yield _file(row)
            if len(rows) < 500:
                return
            after = rows[-1]["handle"]

    # -- overwrite intents (SQL in postgres_intents.py) --------------------------
    async def intend_overwrite(self, intent: OverwriteIntent) -> bool:
        return await postgres_intents.intend(self.pool, intent)

    async def overwrite_intents(self, older_than: float) -> list[OverwriteIntent]:
        return await postgres_intents.listed(self.pool, older_than)

    async def settle_overwrite(self, intent: OverwriteIntent, adopt: bool) -> bool:
        return await postgres_intents.settle(self.pool, intent, adopt)

    # -- multipart uploads (SQL in postgres_uploads.py) ---------------------------
    async def create_upload(self, session: UploadSession) -> None:
        await postgres_uploads.create(self.pool, session)

    async def get_upload(self, upload_id: str) -> UploadSession | None:
        return await postgres_uploads.get(self.pool, upload_id)

    async def put_upload_part(self, part: UploadPart) -> None:
        await postgres_uploads.put_part(self.pool, part)

    async def upload_parts(self, upload_id: str) -> list[UploadPart]:
        return await postgres_uploads.parts(self.pool, upload_id)

    async def finish_upload(self, upload_id: str, handle: str) -> bool:
        return await postgres_uploads.finish(self.pool, upload_id, handle)

    async def delete_upload(self, upload_id: str) -> None:
        await postgres_uploads.delete(self.pool, upload_id)

    async def expired_uploads(self, created_before: float) -> list[UploadSession]:
        return await postgres_uploads.expired(self.pool, created_before)

    # -- webhook deliveries (SQL in postgres_webhooks.py) -------------------------
    async def enqueue_webhooks(self, deliveries: list[WebhookDelivery]) -> list[WebhookDelivery]:
        return await postgres_webhooks.enqueue(self.pool, deliveries)

    async def claim_webhooks(
        self, worker: str, now: float, lease: float, limit: int
    ) -> list[WebhookDelivery]:
        return await postgres_webhooks.claim(self.pool, worker, now, lease, limit)

    async def finish_webhook(
        self,
        delivery_id: int,
        worker: str,
        status: str,
        *,
        now: float,
        next_attempt: float = 0.0,
        response_code: int | None = None,
        error: str = "",
    ) -> bool:
        return await postgres_webhooks.finish(
            self.pool, delivery_id, worker, status, now, next_attempt, response_code, error
        )

    async def webhook_log(
        self, api_key: str | None = None, limit: int = 50
    ) -> list[WebhookDelivery]:
        return await postgres_webhooks.log(self.pool, api_key, limit)

    async def prune_webhooks(self, before: float) -> int:
        return await postgres_webhooks.prune(self.pool, before)

    async def webhook_queue_depth(self) -> int:
        """Deliveries waiting or being delivered (the ``/metrics`` gauge)."""
        count = await self.pool.fetchval(
            "SELECT count(*) FROM webhook_deliveries WHERE status IN ('pending', 'delivering')"
        )
        return int(count)

    # -- rate limits (SQL in postgres_limits.py) ---------------------------------
    async def take_token(self, key: str, rate: float, burst: float) -> tuple[float, bool]:
        """Shared token bucket: (tokens left, whether one was taken)."""
        return await postgres_limits.take(self.pool, key, rate, burst)

    # -- locking ---------------------------------------------------------------
    @asynccontextmanager
    async def handle_lock(self, handle: str) -> AsyncIterator[None]:
        async with self._local_lock(handle), self._advisory_lock(f"handle:{handle}"):
            yield

    @asynccontextmanager
    async def _advisory_lock(self, name: str) -> AsyncIterator[None]:
        if self._lock_pool is None:
            raise errors.RegistryUnavailable("the registry is not open")
        # Releasing the connection to the pool resets it, which unlocks all its advisory
        # locks: a cancelled waiter or holder leaves nothing locked behind.
        async with self._lock_pool.acquire() as conn:
            await conn.execute("SELECT pg_advisory_lock(hashtextextended($1, 0))", name)
            try:
                yield
            finally:
                await conn.execute("SELECT pg_advisory_unlock(hashtextextended($1, 0))", name)

    @asynccontextmanager
    async def exclusive(self, job: str) -> AsyncIterator[bool]:
        if self._lock_pool is None:
            raise errors.RegistryUnavailable("the registry is not open")
        name = f"job:{job}"
        async with self._lock_pool.acquire() as conn:
            mine = await conn.fetchval("SELECT pg_try_advisory_lock(hashtextextended($1, 0))", name)
            try:
                yield bool(mine)
            finally:
                if mine:
                    await conn.execute("SELECT pg_advisory_unlock(hashtextextended($1, 0))", name)

    @asynccontextmanager
    async def _local_lock(self, handle: str) -> AsyncIterator[None]:
        lock, users = self._local.get(handle, (asyncio.Lock(), 0))
        self._local[handle] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._local[handle]
            if users == 1:
                del self._local[handle]
            else:
                self._local[handle] = (lock, users - 1)


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _count(status: str) -> int:
    """asyncpg returns the command tag, e.g. ``DELETE 1``."""
    return int(status.rsplit(" ", 1)[-1])


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
