"""The lease-based queue helper (``registry/queue.py``) on both backends: a queue declared
here, as a new one would be (a job dataclass and a ``QueueSpec``), and the schema of the
declared ones (webhooks, purges), including an upgrade from the previous schema."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stowage.registry import migrate
from stowage.registry.base import EdgePurge
from stowage.registry.postgres import PostgresRegistry
from stowage.registry.postgres.queue import PostgresQueue
from stowage.registry.postgres.store import PostgresStore
from stowage.registry.queue import (
    POSTGRES,
    STANDARD,
    Backoff,
    LeaseQueue,
    QueueSpec,
    fail,
    table_sql,
)
from stowage.registry.queues import PURGES, VIDEO_JOBS, WEBHOOKS
from stowage.registry.sqlite import SQLiteRegistry
from stowage.registry.sqlite.db import SQLiteDB
from stowage.registry.sqlite.queue import SQLiteQueue
from tests.servers.fx_postgres import PostgresServer


@dataclass(frozen=True)
class Render:
    """A job type of a queue the registry does not know: the declaration under test."""

    id: int
    source: str
    width: int
    status: str = "pending"
    attempts: int = 0
    next_attempt: float = 0.0
    lease_until: float = 0.0
    result: str | None = None
    last_error: str = ""
    created: float = field(default=50.0)


KEPT = QueueSpec(
    "renders", Render, payload=("source", "width"), outcome=("result",), keep_finished=True
)
DROPPED = QueueSpec("render_drops", Render, payload=("source", "width"), outcome=("result",))


@pytest.fixture(params=["sqlite", "postgres"])
async def queues(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[LeaseQueue[Render], LeaseQueue[Render]]]:
    if request.param == "sqlite":
        db = SQLiteDB(tmp_path / "q.db", 1, [])
        kept, dropped = SQLiteQueue(db, KEPT), SQLiteQueue(db, DROPPED)
        db.setups += [kept.setup, dropped.setup]
        await db.open()
        yield kept, dropped
        await db.close()
        return
    server: PostgresServer = request.getfixturevalue("postgres_server")
    store = PostgresStore(server.new_database())
    await store.upgrade()
    await store.open()
    for spec in (KEPT, DROPPED):
        await store.pool.execute(table_sql(spec, POSTGRES))
    yield PostgresQueue(store, KEPT), PostgresQueue(store, DROPPED)
    await store.close()


def render(n: int, due: float = 100.0) -> Render:
    return Render(0, f"s3://bucket/{n}.mov", 640 + n, next_attempt=due)


async def test_put_claim_complete(queues: Any) -> None:
    kept, dropped = queues
    for q in (kept, dropped):
        put = await q.put([render(1), render(2, due=500.0)])
        assert put[0].id and put[1].id > put[0].id and put[0].source == "s3://bucket/1.mov"
        assert await q.claim("w1", now=99.0, lease=30, limit=10) == []
        [job] = await q.claim("w1", now=200.0, lease=30, limit=10)
        assert (job.id, job.attempts, job.lease_until, job.width) == (put[0].id, 1, 230.0, 641)
        assert await q.claim("w2", now=210.0, lease=30, limit=10) == []
        assert await q.depth() == 2
        assert not await q.complete(job.id, "w2", 220.0, result="x")  # not its claim
        assert await q.complete(job.id, "w1", 220.0, result="done.mp4")
        assert not await q.complete(job.id, "w1", 221.0)  # only once
        assert await q.depth() == 1
    # Kept: a finished row stays until pruned; dropped: it is gone.
    assert await kept.prune(before=219.0) == 0
    assert await kept.prune(before=300.0) == 1
    assert await dropped.prune(before=300.0) == 0


async def test_fail_backs_off_then_gives_up(queues: Any) -> None:
    kept, _ = queues
    backoff = Backoff(base=10.0, most=15.0, give_up_after=3)
    [queued] = await kept.put([render(1)])
    now = 200.0
    for attempt, delay in ((1, 10.0), (2, 15.0)):
        [job] = await kept.claim("w", now=now, lease=30, limit=1)
        assert job.attempts == attempt
        assert await fail(kept, job.id, job.attempts, "w", now, backoff, error=f"e{attempt}")
        assert await kept.claim("w", now=now + delay - 0.5, lease=30, limit=1) == []
        now += delay
    [last] = await kept.claim("w", now=now, lease=30, limit=1)
    assert last.last_error == "e2"
    assert await fail(kept, last.id, last.attempts, "w", now, backoff, error="e3", result="no")
    assert await kept.claim("w", now=now + 1000, lease=30, limit=1) == []
    assert await kept.depth() == 0
    assert await kept.prune(before=now + 1) == 1  # the failed row was kept until pruned
    assert queued.id == last.id


async def test_an_expired_lease_is_taken_over(queues: Any) -> None:
    _, dropped = queues
    await dropped.put([render(1)])
    [held] = await dropped.claim("w1", now=200.0, lease=30, limit=1)
    [taken] = await dropped.claim("w2", now=231.0, lease=30, limit=1)
    assert taken.id == held.id and taken.attempts == 2
    assert not await dropped.retry(held.id, "w1", 232.0, at=240.0)
    assert await dropped.retry(taken.id, "w2", 232.0, at=240.0, error="busy")
    [again] = await dropped.claim("w1", now=240.0, lease=30, limit=1)
    assert again.last_error == "busy" and again.attempts == 3


async def test_a_renewed_lease_is_not_taken_over_and_a_stopped_one_is(queues: Any) -> None:
    _, dropped = queues
    await dropped.put([render(1), render(2)])
    [alive, stopped] = await dropped.claim("w1", now=200.0, lease=30, limit=2)
    for beat in (220.0, 245.0, 270.0):  # a heartbeat every lease/3 or so, past the first lease
        assert await dropped.renew(alive.id, "w1", now=beat, lease=30)
        assert not await dropped.renew(alive.id, "w2", now=beat, lease=30)  # not its claim
    # At 280 the first lease (230) and the second's (230) are both long past: only the
    # row that was not renewed is due again.
    [taken] = await dropped.claim("w2", now=280.0, lease=30, limit=5)
    assert taken.id == stopped.id and taken.attempts == 2 and taken.lease_until == 310.0
    assert not await dropped.renew(stopped.id, "w1", now=281.0, lease=30)  # it lost the row
    assert await dropped.complete(alive.id, "w1", 290.0)
    assert not await dropped.renew(alive.id, "w1", now=291.0, lease=30)  # ended: gone
    assert await dropped.claim("w3", now=301.0, lease=30, limit=5) == []  # w2's holds to 310
    assert await dropped.claim("w3", now=310.0, lease=30, limit=5) != []


async def test_concurrent_claims_never_share_a_row(queues: Any) -> None:
    kept, _ = queues
    await kept.put([render(n) for n in range(40)])
    batches = await asyncio.gather(
        *(kept.claim(f"w{n}", now=200.0, lease=30, limit=7) for n in range(8))
    )
    ids = [job.id for batch in batches for job in batch]
    assert len(ids) == 40 and len(set(ids)) == 40


async def _sqlite_queue(path: Path) -> tuple[SQLiteDB, SQLiteQueue[Render]]:
    db = SQLiteDB(path, 1, [])
    queue = SQLiteQueue(db, DROPPED)
    db.setups.append(queue.setup)
    await db.open()
    return db, queue


async def test_an_idle_sqlite_claim_only_reads(tmp_path: Path, monkeypatch: Any) -> None:
    """Workers poll several times a second: with nothing due, a claim is one read on the
    loop's connection, not a hand-off to the writer thread and its write lock."""
    db, queue = await _sqlite_queue(tmp_path / "q.db")
    writes: list[object] = []
    real = db.write

    async def counted(fn: Any) -> Any:
        writes.append(fn)
        return await real(fn)

    monkeypatch.setattr(db, "write", counted)
    try:
        await queue.put([render(1, due=150.0)])
        assert len(writes) == 1
        assert await queue.claim("w", now=100.0, lease=30, limit=5) == []
        assert len(writes) == 1
        [job] = await queue.claim("w", now=150.0, lease=30, limit=5)
        assert len(writes) == 2
        assert await queue.claim("w", now=179.0, lease=30, limit=5) == []  # held to 180
        assert len(writes) == 2
        [again] = await queue.claim("w2", now=180.0, lease=30, limit=5)
        assert (again.id, again.attempts, len(writes)) == (job.id, 2, 3)
    finally:
        await db.close()


@settings(max_examples=40, deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(["put", "claim", "complete"]), st.integers(0, 60)),
        min_size=1,
        max_size=25,
    ),
    lease=st.integers(1, 40),
)
def test_a_claim_takes_exactly_the_due_rows(
    tmp_path_factory: pytest.TempPathFactory,
    steps: list[tuple[str, int]],
    lease: int,
) -> None:
    """Generated schedules against a model: the read before the claim never hides a due
    row (pending and due, or leased with its lease run out) and never shows another."""
    path = tmp_path_factory.mktemp("q") / "q.db"
    asyncio.run(_run_schedule(path, steps, lease))


async def _run_schedule(path: Path, steps: list[tuple[str, int]], lease: int) -> None:
    db, queue = await _sqlite_queue(path)
    now, rows = 100.0, {}  # id -> (due, holder or None)
    try:
        for n, (step, arg) in enumerate(steps):
            now += arg % 7
            if step == "put":
                [job] = await queue.put([render(n, due=now + arg % 11 - 5)])
                rows[job.id] = (job.next_attempt, None)
            elif step == "claim":
                due = {i for i, (at, holder) in rows.items() if at <= now}
                got = await queue.claim(f"w{n}", now=now, lease=lease, limit=100)
                assert {job.id for job in got} == due
                rows |= {job.id: (now + lease, f"w{n}") for job in got}
            elif rows:
                job_id = sorted(rows)[arg % len(rows)]
                holder = rows[job_id][1]
                if holder is not None and await queue.complete(job_id, holder, now):
                    del rows[job_id]
    finally:
        await db.close()


async def test_an_unknown_outcome_column_is_refused(queues: Any) -> None:
    for q in queues:
        [job] = await q.put([render(1)])
        with pytest.raises(ValueError, match="outcome"):
            await q.complete(job.id, "w", 1.0, width=3)


@given(
    base=st.floats(0.01, 100),
    most=st.floats(0.01, 1000),
    limit=st.none() | st.integers(1, 20),
    attempts=st.integers(1, 40),
)
def test_backoff_doubles_up_to_its_most_and_gives_up_after_its_attempts(
    base: float, most: float, limit: int | None, attempts: int
) -> None:
    backoff = Backoff(base, most, limit)
    assert backoff.delay(attempts) <= max(most, 0)
    assert backoff.delay(attempts + 1) >= backoff.delay(attempts)
    at = backoff.retry_at(1000.0, attempts)
    assert (at is None) == (limit is not None and attempts >= limit)
    if at is not None:
        assert at == 1000.0 + backoff.delay(attempts)


def _expected(spec: QueueSpec[Any]) -> set[str]:
    return {"id", *spec.payload, *spec.outcome, *STANDARD}


async def test_declared_queue_tables_match_their_specs_on_both_backends(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    lite = SQLiteRegistry(tmp_path / "r.db")
    await lite.open()
    await lite.close()
    conn = sqlite3.connect(tmp_path / "r.db")
    for spec in (WEBHOOKS, PURGES, VIDEO_JOBS):
        have = {row[1] for row in conn.execute(f"PRAGMA table_info({spec.table})")}
        assert have == _expected(spec)
    conn.close()
    dsn = postgres_server.new_database()
    await PostgresRegistry(dsn).upgrade()
    pg = await asyncpg.connect(dsn)
    try:
        for spec in (WEBHOOKS, PURGES, VIDEO_JOBS):
            rows = await pg.fetch(
                "SELECT column_name FROM information_schema.columns WHERE table_name = $1",
                spec.table,
            )
            assert {r["column_name"] for r in rows} == _expected(spec)
    finally:
        await pg.close()


# The edge_purges table as the previous release (schema 1 / migration 0006) made it.
OLD_PURGES = """
CREATE TABLE edge_purges (
    id INTEGER PRIMARY KEY AUTOINCREMENT, cache TEXT NOT NULL, tag TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0, next_attempt REAL NOT NULL DEFAULT 0,
    lease_until REAL NOT NULL DEFAULT 0, last_error TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL, claimed_by TEXT NOT NULL DEFAULT ''
);
INSERT INTO edge_purges (cache, tag, attempts, next_attempt, lease_until, created, claimed_by)
VALUES ('http://c', 'held', 1, 0, 500, 1, 'old-node'), ('http://c', 'waiting', 0, 10, 0, 1, '');
PRAGMA user_version = 1;
"""


async def _old_rows_keep_their_meaning(registry: Any) -> None:
    assert await registry.purge_queue_depth() == 2
    [waiting] = await registry.claim_purges("new", now=100.0, lease=1000, limit=10)
    assert waiting.tag == "waiting"  # the held row's lease (until 500) is respected
    [held] = await registry.claim_purges("new", now=501.0, lease=30, limit=10)
    assert held.tag == "held" and held.attempts == 2
    assert await registry.finish_purge(held.id, "new", done=True, next_attempt=0)
    await registry.enqueue_purges([EdgePurge(0, "http://c", "waiting", created=time.time())])
    assert await registry.purge_queue_depth() == 2  # "waiting" is leased: a new row is due


async def test_a_sqlite_file_of_the_previous_release_is_upgraded(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "r.db")
    conn.executescript(OLD_PURGES)
    conn.close()
    registry = SQLiteRegistry(tmp_path / "r.db")
    await registry.open()
    try:
        await _old_rows_keep_their_meaning(registry)
    finally:
        await registry.close()


async def test_a_postgres_database_of_the_previous_release_is_upgraded(
    postgres_server: PostgresServer,
) -> None:
    dsn = postgres_server.new_database()
    pg = await asyncpg.connect(dsn)
    try:
        await pg.execute(
            "CREATE TABLE stowage_schema (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
            "applied TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        for m in migrate.migrations()[:6]:
            await pg.execute(m.sql)
            await pg.execute("INSERT INTO stowage_schema VALUES ($1, $2)", m.version, m.name)
        await pg.execute(OLD_PURGES.split(");", 1)[1].rsplit("PRAGMA", 1)[0])
    finally:
        await pg.close()
    registry = PostgresRegistry(dsn)
    assert await registry.upgrade() == [m.name for m in migrate.migrations()[6:]]
    await registry.open()
    try:
        await _old_rows_keep_their_meaning(registry)
    finally:
        await registry.close()


async def test_a_sqlite_video_queue_without_progress_gains_the_column(tmp_path: Path) -> None:
    """A video_jobs table of the previous release (no ``progress``) is upgraded at open;
    its jobs read as having reported none."""
    path = tmp_path / "r.db"
    registry = SQLiteRegistry(path)
    await registry.open()
    await registry.close()
    conn = sqlite3.connect(path)
    conn.execute("ALTER TABLE video_jobs DROP COLUMN progress")
    conn.execute(
        "INSERT INTO video_jobs (key, uuid, handle, api_key, version, chain, created) "
        "VALUES ('k', 'u', 'H', 'KEY', 1, 'video_convert', 1)"
    )
    conn.commit()
    conn.close()
    registry = SQLiteRegistry(path)
    await registry.open()
    try:
        job = await registry.video_job("k")
        assert job is not None and job.uuid == "u" and job.progress is None
        [held] = await registry.claim_videos("w", now=2.0, lease=60, limit=1)
        assert await registry.video_progress(held.id, "w", 12.0)
        assert (await registry.video_job("k")).progress == 12.0
    finally:
        await registry.close()
