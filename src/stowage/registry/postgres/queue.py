"""The lease-based queue (``registry/queue.py``) in PostgreSQL.

A claim is one ``UPDATE ... WHERE id IN (SELECT ... FOR UPDATE SKIP LOCKED)``: workers on
any number of nodes each take rows no other worker holds, without waiting on each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stowage.registry.postgres.store import PostgresStore, count
from stowage.registry.queue import J, QueueBase, QueueSpec, numbered


class PostgresQueue(QueueBase[J]):
    def __init__(self, store: PostgresStore, spec: QueueSpec[J]) -> None:
        super().__init__(spec)
        self.store = store
        self._insert = numbered(self.sql.insert) + " RETURNING id"
        self._claim = (
            numbered(self.sql.claim_set + " FOR UPDATE SKIP LOCKED")
            + f") RETURNING {self.sql.returning}"
        )

    async def put(self, jobs: Sequence[J]) -> list[J]:
        done: list[J] = []
        async with self.store.pool.acquire() as conn, conn.transaction():
            for job in jobs:
                values = (*self.spec.insert_values(job), *self.sql.waiting_key(job))
                new_id = await conn.fetchval(self._insert, *values)
                if new_id is not None:
                    done.append(self.spec.queued(job, int(new_id)))
        return done

    async def claim(self, worker: str, now: float, lease: float, limit: int) -> list[J]:
        leased = self.spec.leased
        rows = await self.store.pool.fetch(
            self._claim, leased, worker, now + lease, now, now, leased, now, limit
        )
        return sorted((self.spec.job_of(tuple(r.values())) for r in rows), key=lambda j: j.id)

    async def _execute(self, sql: str, values: Sequence[Any]) -> int:
        return count(await self.store.pool.execute(numbered(sql), *values))

    async def select(self, where: str, values: Sequence[Any]) -> list[J]:
        rows = await self.store.pool.fetch(numbered(self.select_sql(where)), *values)
        return [self.spec.job_of(tuple(r.values())) for r in rows]

    async def depth(self) -> int:
        sql = numbered(self.sql.depth)
        return int(await self.store.pool.fetchval(sql, self.spec.leased))
