"""The PostgreSQL store: its connection pools, schema check and readiness.

The schema is created and upgraded by ``stowage db upgrade`` (``registry/migrate.py``);
``open`` refuses a schema version this code does not know. Lock connections have a pool
of their own (``locks.py``), so a lock holder always finds a connection for its queries.
"""

from __future__ import annotations

import asyncpg

from stowage import errors
from stowage.registry import migrate

_CONNECT_ERRORS = (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError)


class PostgresStore:
    def __init__(self, dsn: str, pool_size: int = 10, lock_pool_size: int = 10) -> None:
        self.dsn = dsn
        self.pool_size = pool_size
        self.lock_pool_size = lock_pool_size
        self._pool: asyncpg.Pool | None = None
        self._lock_pool: asyncpg.Pool | None = None

    async def open(self) -> None:
        """Connects and checks the schema; never creates or changes it."""
        self._pool = await self._create_pool(self.pool_size)
        try:
            migrate.check_current(await self._version())
            # Its connections are opened on first use: only writes to an existing handle
            # and exclusive jobs lock, and a node's start need not wait for one.
            self._lock_pool = await self._create_pool(self.lock_pool_size, at_least=0)
        except BaseException:
            await self.close()
            raise

    async def _create_pool(self, size: int, at_least: int = 1) -> asyncpg.Pool:
        try:
            pool = await asyncpg.create_pool(
                self.dsn, min_size=at_least, max_size=size, command_timeout=60, timeout=10
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

    @property
    def lock_pool(self) -> asyncpg.Pool:
        if self._lock_pool is None:
            raise errors.RegistryUnavailable("the registry is not open")
        return self._lock_pool


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def count(status: str) -> int:
    """asyncpg returns the command tag, e.g. ``DELETE 1``."""
    return int(str(status).rsplit(" ", 1)[-1])
