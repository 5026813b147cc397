"""Handle locks and exclusive jobs (``Locks``) of the PostgreSQL registry.

``handle_lock`` is a session advisory lock on a hash of the handle, held on a connection
of the lock pool for the lock's duration; waiters on one node queue on an in-process lock
first, so a node spends at most one connection per locked handle.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from stowage.registry.postgres.store import PostgresStore


class PostgresLocks:
    def __init__(self, store: PostgresStore) -> None:
        self.store = store
        self._local: dict[str, tuple[asyncio.Lock, int]] = {}

    @asynccontextmanager
    async def handle_lock(self, handle: str) -> AsyncIterator[None]:
        async with self._local_lock(handle), self._advisory_lock(f"handle:{handle}"):
            yield

    @asynccontextmanager
    async def _advisory_lock(self, name: str) -> AsyncIterator[None]:
        # Releasing the connection to the pool resets it, which unlocks all its advisory
        # locks: a cancelled waiter or holder leaves nothing locked behind.
        async with self.store.lock_pool.acquire() as conn:
            await conn.execute("SELECT pg_advisory_lock(hashtextextended($1, 0))", name)
            try:
                yield
            finally:
                await conn.execute("SELECT pg_advisory_unlock(hashtextextended($1, 0))", name)

    @asynccontextmanager
    async def exclusive(self, job: str) -> AsyncIterator[bool]:
        name = f"job:{job}"
        async with self.store.lock_pool.acquire() as conn:
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
