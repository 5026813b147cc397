"""The edge purge queue (``PurgeQueue``) in the PostgreSQL registry (migration 0006).

A mixin of ``PostgresRegistry``. A claim is one ``UPDATE ... WHERE id IN (SELECT ... FOR
UPDATE SKIP LOCKED)``: workers on any number of nodes each take rows no other holds.
"""

from __future__ import annotations

import asyncpg

from stowage.registry.base import EdgePurge

COLUMNS = "id, cache, tag, attempts, next_attempt, lease_until, last_error, created"


class PostgresPurges:
    @property
    def pool(self) -> asyncpg.Pool:
        raise NotImplementedError  # provided by PostgresRegistry

    async def enqueue_purges(self, purges: list[EdgePurge]) -> None:
        async with self.pool.acquire() as conn, conn.transaction():
            for p in purges:
                # One waiting row per cache and tag is enough: the purge carries no content.
                await conn.execute(
                    "INSERT INTO edge_purges (cache, tag, next_attempt, last_error, created) "
                    "SELECT $1, $2, $3, $4, $5 WHERE NOT EXISTS (SELECT 1 FROM edge_purges "
                    "WHERE cache = $1 AND tag = $2 AND claimed_by = '')",
                    p.cache,
                    p.tag,
                    p.next_attempt,
                    p.last_error,
                    p.created,
                )

    async def claim_purges(
        self, worker: str, now: float, lease: float, limit: int
    ) -> list[EdgePurge]:
        rows = await self.pool.fetch(
            "UPDATE edge_purges SET claimed_by = $1, lease_until = $2, attempts = attempts + 1 "
            "WHERE id IN (SELECT id FROM edge_purges WHERE (claimed_by = '' AND "
            "next_attempt <= $3) OR (claimed_by != '' AND lease_until <= $3) "
            f"ORDER BY next_attempt, id LIMIT $4 FOR UPDATE SKIP LOCKED) RETURNING {COLUMNS}",
            worker,
            now + lease,
            now,
            limit,
        )
        return sorted((EdgePurge(*r.values()) for r in rows), key=lambda p: p.id)

    async def finish_purge(
        self, purge_id: int, worker: str, *, done: bool, next_attempt: float, error: str = ""
    ) -> bool:
        if done:
            result = await self.pool.execute(
                "DELETE FROM edge_purges WHERE id = $1 AND claimed_by = $2", purge_id, worker
            )
        else:
            result = await self.pool.execute(
                "UPDATE edge_purges SET claimed_by = '', lease_until = 0, next_attempt = $1, "
                "last_error = $2 WHERE id = $3 AND claimed_by = $4",
                next_attempt,
                error,
                purge_id,
                worker,
            )
        return str(result).endswith(" 1")

    async def purge_queue_depth(self) -> int:
        return int(await self.pool.fetchval("SELECT count(*) FROM edge_purges"))
