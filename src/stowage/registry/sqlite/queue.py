"""The lease-based queue (``registry/queue.py``) in SQLite.

Writes run on the registry's writer thread, so a claim (one ``UPDATE ... RETURNING``)
is atomic against every other write: two workers never take the same row.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from stowage.registry.queue import (
    SQLITE,
    STANDARD,
    J,
    QueueBase,
    QueueSpec,
    create_table_sql,
    index_sql,
    nullable_outcome,
    question_marks,
)
from stowage.registry.sqlite.db import SQLiteDB, add_missing_columns, transaction


class SQLiteQueue(QueueBase[J]):
    def __init__(self, db: SQLiteDB, spec: QueueSpec[J]) -> None:
        super().__init__(spec)
        self.db = db

    def setup(self, conn: sqlite3.Connection) -> None:
        """Creates the table, or adds the standard columns an older release's lacks."""
        conn.executescript(create_table_sql(self.spec, SQLITE))
        columns = {k: v[0] for k, v in STANDARD.items()} | nullable_outcome(self.spec)
        added = add_missing_columns(conn, self.spec.table, columns)
        if "status" in added:  # rows claimed before states existed are leased
            conn.execute(
                f"UPDATE {self.spec.table} SET status = ? WHERE claimed_by != ''",
                (self.spec.leased,),
            )
        conn.executescript(index_sql(self.spec))

    async def put(self, jobs: Sequence[J]) -> list[J]:
        insert = question_marks(self.sql.insert)

        def run(conn: sqlite3.Connection) -> list[J]:
            done = []
            for job in jobs:
                values = (*self.spec.insert_values(job), *self.sql.waiting_key(job))
                cursor = conn.execute(insert, values)
                if cursor.rowcount and cursor.lastrowid is not None:
                    done.append(self.spec.queued(job, cursor.lastrowid))
            return done

        return await self.db.write(lambda conn: transaction(conn, lambda: run(conn)))

    async def claim(self, worker: str, now: float, lease: float, limit: int) -> list[J]:
        leased = self.spec.leased
        # Idle workers poll several times a second: a read on the loop's connection
        # finds nothing due without the writer thread's hand-off and the write lock.
        if not self.db.rows(question_marks(self.sql.due) + " LIMIT 1", (now, leased, now)):
            return []
        sql = question_marks(self.sql.claim_set) + f") RETURNING {self.sql.returning}"
        values = (leased, worker, now + lease, now, now, leased, now, limit)
        rows = await self.db.write(lambda conn: conn.execute(sql, values).fetchall())
        return sorted((self.spec.job_of(r) for r in rows), key=lambda j: j.id)

    async def _execute(self, sql: str, values: Sequence[Any]) -> int:
        return await self.db.execute(question_marks(sql), values)

    async def select(self, where: str, values: Sequence[Any]) -> list[J]:
        rows = self.db.rows(question_marks(self.select_sql(where)), tuple(values))
        return [self.spec.job_of(r) for r in rows]

    async def depth(self) -> int:
        return int(self.db.rows(question_marks(self.sql.depth), (self.spec.leased,))[0][0])
