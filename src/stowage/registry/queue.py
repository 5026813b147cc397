"""Lease-based queues: the one claim/lease/backoff model every queued job shares.

A queue is a table with the job's own columns plus the standard ones (``STANDARD``). A
worker ``claim``s due rows (``pending`` with ``next_attempt <= now``, or ``leased`` with
an expired lease) for itself until ``now + lease`` and counts the attempt; two workers
never hold the same row. The holder ``renew``s its lease while it works (a heartbeat), so
a lease can be short and a stopped worker's row is due again soon after it stops. Only
the worker holding the claim can end it, once: ``complete``
(the row is kept as ``done`` or deleted), ``retry`` (``pending`` again at a time) or
``give_up`` (``failed`` or deleted). ``fail`` is ``retry`` with a ``Backoff``, which gives
up after its number of attempts. ``depth`` counts waiting and leased rows; ``prune`` drops
finished rows last updated before a time.

Adding a queue is a declaration: a frozen dataclass for the job (its fields are the
table's columns: ``id`` first, then its own, with any of ``status``, ``attempts``,
``next_attempt``, ``lease_until``, ``last_error``, ``created``, ``updated`` it wants to
read) and a ``QueueSpec`` naming the table and the job's own columns. SQLite creates the
table from the spec (``table_sql``); PostgreSQL gets it from a migration file holding the
same ``table_sql(spec, POSTGRES)`` text. Each backend has one implementation
(``sqlite/queue.py``, ``postgres/queue.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar


class Job(Protocol):
    """A queued job: a frozen dataclass whose first field is its row ``id``."""

    @property
    def id(self) -> int: ...


J = TypeVar("J", bound=Job)

PENDING, FAILED = "pending", "failed"
SQLITE, POSTGRES = "sqlite", "postgres"

#: The columns every queue table has besides the job's own, with their SQL per backend.
STANDARD: dict[str, tuple[str, str]] = {
    "status": ("TEXT NOT NULL DEFAULT 'pending'", "TEXT NOT NULL DEFAULT 'pending'"),
    "attempts": ("INTEGER NOT NULL DEFAULT 0", "INTEGER NOT NULL DEFAULT 0"),
    "next_attempt": ("REAL NOT NULL DEFAULT 0", "DOUBLE PRECISION NOT NULL DEFAULT 0"),
    "lease_until": ("REAL NOT NULL DEFAULT 0", "DOUBLE PRECISION NOT NULL DEFAULT 0"),
    "claimed_by": ("TEXT NOT NULL DEFAULT ''", "TEXT NOT NULL DEFAULT ''"),
    "last_error": ("TEXT NOT NULL DEFAULT ''", "TEXT NOT NULL DEFAULT ''"),
    "created": ("REAL NOT NULL", "DOUBLE PRECISION NOT NULL"),
    "updated": ("REAL NOT NULL DEFAULT 0", "DOUBLE PRECISION NOT NULL DEFAULT 0"),
}
_TYPES = {
    "int": ("INTEGER", "BIGINT"),
    "float": ("REAL", "DOUBLE PRECISION"),
    "str": ("TEXT", "TEXT"),
    "bool": ("INTEGER", "BOOLEAN"),
}


@dataclass(frozen=True)
class QueueSpec(Generic[J]):
    """One queue: its table, its job type and which of the job's fields are its own."""

    table: str
    job: type[J]
    #: The job's own columns, written by ``put``.
    payload: tuple[str, ...]
    #: Columns an attempt's end may set (e.g. a webhook's ``response_code``).
    outcome: tuple[str, ...] = ()
    #: Finished rows stay (``done``/``failed``, a log pruned by ``prune``) or are deleted.
    keep_finished: bool = False
    #: A ``put`` is dropped while a waiting row has the same values in these columns.
    one_waiting_per: tuple[str, ...] = ()
    #: A ``put`` is dropped while any row, whatever its state, has the same values in
    #: these columns (a unique index holds it across nodes).
    one_per: tuple[str, ...] = ()
    #: State names (the webhook log shows ``delivering`` and ``delivered``).
    leased: str = "leased"
    done: str = "done"
    #: Index name -> columns; by default one on (status, next_attempt).
    indexes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def columns(self) -> tuple[str, ...]:
        """What a claim returns: the job's fields, in order."""
        return tuple(f.name for f in dataclasses.fields(self.job))  # type: ignore[arg-type]

    def insert_columns(self) -> tuple[str, ...]:
        return (*self.payload, "status", "next_attempt", "last_error", "created", "updated")

    def insert_values(self, job: J) -> tuple[Any, ...]:
        created = getattr(job, "created", 0.0)
        own = tuple(getattr(job, name) for name in self.payload)
        due = getattr(job, "next_attempt", 0.0)
        return (*own, PENDING, due, getattr(job, "last_error", ""), created, created)

    def queued(self, job: J, new_id: int) -> J:
        """``job`` as ``put`` stored it."""
        changes: dict[str, Any] = {"id": new_id}
        if "status" in self.columns():
            changes["status"] = PENDING
        return dataclasses.replace(job, **changes)  # type: ignore[type-var]

    def job_of(self, row: Sequence[Any]) -> J:
        return self.job(*row)

    def all_indexes(self) -> Mapping[str, tuple[str, ...]]:
        return self.indexes or {f"{self.table}_due": ("status", "next_attempt")}


def table_sql(spec: QueueSpec[Any], dialect: str) -> str:
    """The queue's table and indexes (``IF NOT EXISTS``): SQLite runs it on open; a
    PostgreSQL migration holds the same text."""
    return create_table_sql(spec, dialect) + index_sql(spec)


def create_table_sql(spec: QueueSpec[Any], dialect: str) -> str:
    which = 0 if dialect == SQLITE else 1
    hints = {f.name: str(f.type) for f in dataclasses.fields(spec.job)}
    key = "INTEGER PRIMARY KEY AUTOINCREMENT" if which == 0 else "BIGSERIAL PRIMARY KEY"
    lines = [f"    id {key}"]
    for name in (*spec.payload, *spec.outcome):
        hint = hints[name].replace(" ", "")
        nullable = hint.endswith("|None")
        sql_type = _TYPES[hint.removesuffix("|None")][which]
        lines.append(f"    {name} {sql_type}{'' if nullable else ' NOT NULL'}")
    lines += [f"    {name} {sql[which]}" for name, sql in STANDARD.items()]
    body = ",\n".join(lines)
    return f"CREATE TABLE IF NOT EXISTS {spec.table} (\n{body}\n);\n"


def nullable_outcome(spec: QueueSpec[Any]) -> dict[str, str]:
    """The outcome columns that may be null (name -> SQLite type): those a later release
    may add to an existing table (a video job's ``progress``)."""
    hints = {f.name: str(f.type).replace(" ", "") for f in dataclasses.fields(spec.job)}
    return {
        name: _TYPES[hints[name].removesuffix("|None")][0]
        for name in spec.outcome
        if hints[name].endswith("|None")
    }


def index_sql(spec: QueueSpec[Any]) -> str:
    unique = (
        f"CREATE UNIQUE INDEX IF NOT EXISTS {spec.table}_one_per "
        f"ON {spec.table} ({', '.join(spec.one_per)});\n"
        if spec.one_per
        else ""
    )
    return unique + "".join(
        f"CREATE INDEX IF NOT EXISTS {name} ON {spec.table} ({', '.join(cols)});\n"
        for name, cols in spec.all_indexes().items()
    )


@dataclass(frozen=True)
class Backoff:
    """Delay after the ``attempts``-th failed attempt: ``base`` doubling up to ``most``;
    after ``give_up_after`` attempts (None: never) the job fails."""

    base: float
    most: float
    give_up_after: int | None = None

    def delay(self, attempts: int) -> float:
        return float(min(self.base * 2 ** max(attempts - 1, 0), self.most))

    def retry_at(self, now: float, attempts: int) -> float | None:
        """When to try again, or None to give up."""
        if self.give_up_after is not None and attempts >= self.give_up_after:
            return None
        return now + self.delay(attempts)


class LeaseQueue(Protocol[J]):
    """One queue in one backend (contract in ``tests/registry/test_queue.py``)."""

    spec: QueueSpec[J]

    async def put(self, jobs: Sequence[J]) -> list[J]: ...
    async def claim(self, worker: str, now: float, lease: float, limit: int) -> list[J]: ...
    async def renew(self, job_id: int, worker: str, now: float, lease: float) -> bool:
        """Extends ``worker``'s claim to ``now + lease``; False when the claim is no longer
        its own (taken over after its lease expired, ended, or the row deleted)."""
        ...

    async def note(self, job_id: int, worker: str, **outcome: Any) -> bool:
        """Sets outcome columns of a job ``worker`` still holds (a running job's progress);
        False when it no longer holds it."""
        ...

    async def complete(
        self, job_id: int, worker: str, now: float, *, error: str = "", **outcome: Any
    ) -> bool: ...
    async def retry(
        self, job_id: int, worker: str, now: float, at: float, *, error: str = "", **outcome: Any
    ) -> bool: ...
    async def give_up(
        self, job_id: int, worker: str, now: float, *, error: str = "", **outcome: Any
    ) -> bool: ...
    async def depth(self) -> int: ...
    async def prune(self, before: float) -> int: ...
    async def select(self, where: str, values: Sequence[Any]) -> list[J]:
        """The jobs matching ``where`` (SQL on the table's columns, ``{p}`` placeholders)."""
        ...

    async def delete(self, where: str, values: Sequence[Any]) -> int:
        """Deletes the rows matching ``where``, whatever their state; how many."""
        ...


async def fail(
    queue: LeaseQueue[J],
    job_id: int,
    attempts: int,
    worker: str,
    now: float,
    backoff: Backoff,
    *,
    error: str = "",
    **outcome: Any,
) -> bool:
    """Ends a failed attempt: due again after ``backoff``, or given up after its attempts."""
    at = backoff.retry_at(now, attempts)
    if at is None:
        return await queue.give_up(job_id, worker, now, error=error, **outcome)
    return await queue.retry(job_id, worker, now, at, error=error, **outcome)


class QueueBase(Generic[J]):
    """What the backends share: ending a claim and pruning are plain statements."""

    def __init__(self, spec: QueueSpec[J]) -> None:
        self.spec = spec
        self.sql = Statements(spec)

    async def _execute(self, sql: str, values: Sequence[Any]) -> int:
        """Runs one write (``{p}`` placeholders); its row count."""
        raise NotImplementedError

    async def renew(self, job_id: int, worker: str, now: float, lease: float) -> bool:
        values = (now + lease, now, job_id, worker, self.spec.leased)
        return await self._execute(self.sql.renew, values) > 0

    async def note(self, job_id: int, worker: str, **outcome: Any) -> bool:
        sets = ", ".join(f"{c} = {{p}}" for c in outcome if c in self.spec.outcome)
        sql = f"UPDATE {self.spec.table} SET {sets} WHERE {self.sql.mine}"
        values = (*outcome.values(), job_id, worker, self.spec.leased)
        return await self._execute(sql, values) > 0

    async def complete(
        self, job_id: int, worker: str, now: float, *, error: str = "", **outcome: Any
    ) -> bool:
        return await self._end(self.spec.done, job_id, worker, now, None, error, outcome)

    async def retry(
        self, job_id: int, worker: str, now: float, at: float, *, error: str = "", **outcome: Any
    ) -> bool:
        return await self._end(PENDING, job_id, worker, now, at, error, outcome)

    async def give_up(
        self, job_id: int, worker: str, now: float, *, error: str = "", **outcome: Any
    ) -> bool:
        return await self._end(FAILED, job_id, worker, now, None, error, outcome)

    async def prune(self, before: float) -> int:
        return await self._execute(self.sql.prune, (self.spec.done, before))

    async def delete(self, where: str, values: Sequence[Any]) -> int:
        return await self._execute(f"DELETE FROM {self.spec.table} WHERE {where}", values)

    def select_sql(self, where: str) -> str:
        return f"SELECT {self.sql.returning} FROM {self.spec.table} WHERE {where} ORDER BY id"

    async def _end(
        self,
        status: str,
        job_id: int,
        worker: str,
        now: float,
        at: float | None,
        error: str,
        outcome: dict[str, Any],
    ) -> bool:
        self.sql.check(outcome)
        mine = (job_id, worker, self.spec.leased)
        if at is None and not self.spec.keep_finished:
            return await self._execute(self.sql.delete, mine) > 0
        due = () if at is None else (at,)
        values = (status, *due, error, now, *outcome.values(), *mine)
        return await self._execute(self.sql.end(outcome, retry=at is not None), values) > 0


class Statements:
    """The SQL of one queue, with ``{p}`` placeholders each backend numbers its own way."""

    def __init__(self, spec: QueueSpec[Any]) -> None:
        self.spec = spec
        t, cols = spec.table, ", ".join(spec.columns())
        self.returning = cols
        insert = spec.insert_columns()
        self.insert = f"INSERT INTO {t} ({', '.join(insert)}) SELECT {_marks(len(insert))}"
        if spec.one_waiting_per:
            same = " AND ".join(f"{c} = {{p}}" for c in spec.one_waiting_per)
            self.insert += (
                f" WHERE NOT EXISTS (SELECT 1 FROM {t} WHERE status = 'pending' AND {same})"
            )
        elif spec.one_per:
            same = " AND ".join(f"{c} = {{p}}" for c in spec.one_per)
            # NOT EXISTS skips the insert; ON CONFLICT settles two nodes' concurrent puts.
            self.insert += (
                f" WHERE NOT EXISTS (SELECT 1 FROM {t} WHERE {same}) ON CONFLICT DO NOTHING"
            )
        #: The ids of due jobs (values: now, leased, now): pending and due, or leased
        #: with the lease run out.
        self.due = (
            f"SELECT id FROM {t} WHERE (status = 'pending' AND next_attempt <= {{p}}) "
            "OR (status = {p} AND lease_until <= {p})"
        )
        self.claim_set = (
            f"UPDATE {t} SET status = {{p}}, claimed_by = {{p}}, lease_until = {{p}}, "
            f"attempts = attempts + 1, updated = {{p}} WHERE id IN ({self.due} "
            "ORDER BY next_attempt, id LIMIT {p}"
        )
        self.mine = "id = {p} AND claimed_by = {p} AND status = {p}"
        self.delete = f"DELETE FROM {t} WHERE " + self.mine
        self.renew = f"UPDATE {t} SET lease_until = {{p}}, updated = {{p}} WHERE " + self.mine
        self.depth = f"SELECT count(*) FROM {t} WHERE status IN ('pending', {{p}})"
        self.prune = f"DELETE FROM {t} WHERE status IN ({{p}}, 'failed') AND updated < {{p}}"

    def check(self, outcome: Mapping[str, Any]) -> None:
        unknown = set(outcome) - set(self.spec.outcome)
        if unknown:
            raise ValueError(f"not an outcome column of {self.spec.table}: {sorted(unknown)}")

    def end(self, outcome: Mapping[str, Any], retry: bool) -> str:
        """UPDATE ending a claim: status, [next_attempt,] last_error, updated, outcome."""
        sets = ["status = {p}", *(["next_attempt = {p}"] if retry else [])]
        sets += ["last_error = {p}", "updated = {p}", *(f"{c} = {{p}}" for c in outcome)]
        return (
            f"UPDATE {self.spec.table} SET {', '.join(sets)}, lease_until = 0, claimed_by = '' "
            "WHERE " + self.mine
        )

    def waiting_key(self, job: Any) -> tuple[Any, ...]:
        return tuple(getattr(job, c) for c in self.spec.one_waiting_per or self.spec.one_per)


def _marks(count: int) -> str:
    return ", ".join(["{p}"] * count)


def numbered(sql: str) -> str:
    """``{p}`` placeholders as PostgreSQL's ``$1, $2, ...``."""
    parts = sql.split("{p}")
    return "".join(f"{part}${n}" if n < len(parts) else part for n, part in enumerate(parts, 1))


def question_marks(sql: str) -> str:
    """``{p}`` placeholders as SQLite's ``?``."""
    return sql.replace("{p}", "?")
