"""The SQLite store: its file, its connections and its writer thread.

Reads run on the event loop thread through their own connection (WAL makes them cheap
and never blocked by the writer); every write goes through one writer thread, so a
commit's fsync never stalls the loop. Each concern (``apps.py``, ``files.py``, ...)
reads with ``rows`` and writes with ``write``.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from stowage import errors

T = TypeVar("T")
#: Creates or updates a part of the schema on the writer's connection, at open.
Setup = Callable[[sqlite3.Connection], None]


class SQLiteDB:
    def __init__(self, path: Path, schema_version: int, setups: Sequence[Setup]) -> None:
        self.path = path
        self.schema_version = schema_version
        self.setups = list(setups)
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="registry-writer")
        self._write_conn: sqlite3.Connection | None = None
        self._read_conn: sqlite3.Connection | None = None

    async def open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        await self._in_writer(self._open_writer)
        self._read_conn = self._connect()

    def _open_writer(self) -> None:
        conn = self._connect()
        for setup in self.setups:  # IF NOT EXISTS: older files gain new parts here
            setup(conn)
        conn.execute(f"PRAGMA user_version = {self.schema_version}")
        self._write_conn = conn

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA busy_timeout = 30000")
        return conn

    async def close(self) -> None:
        if self._write_conn is not None:
            await self._in_writer(self._write_conn.close)
        if self._read_conn is not None:
            self._read_conn.close()
        self._writer.shutdown(wait=True)

    async def ping(self) -> None:
        try:
            self.rows("SELECT 1")
        except (sqlite3.Error, AssertionError) as exc:
            raise errors.RegistryUnavailable(f"SQLite does not answer: {exc}") from exc

    async def _in_writer(self, fn: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._writer, fn)

    async def write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Runs ``fn`` with the writer's connection on the writer thread."""

        def run() -> T:
            assert self._write_conn is not None, "the registry is not open"
            return fn(self._write_conn)

        return await self._in_writer(run)

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """One write statement; its row count."""
        return await self.write(lambda conn: conn.execute(sql, params).rowcount)

    @property
    def reader(self) -> sqlite3.Connection:
        assert self._read_conn is not None, "the registry is not open"
        return self._read_conn

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.reader.execute(sql, params).fetchall()


def transaction(conn: sqlite3.Connection, body: Callable[[], T]) -> T:
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = body()
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return result


def add_missing_columns(conn: sqlite3.Connection, table: str, columns: dict[str, str]) -> list[str]:
    """Adds the ``columns`` (name -> SQL) a table made by an older release lacks."""
    have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
    added = [name for name in columns if name not in have]
    for name in added:
        conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} {columns[name]}")
    return added
