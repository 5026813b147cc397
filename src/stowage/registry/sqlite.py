"""SQLite registry: the embedded default.

Reads run on the event loop thread through their own connection (WAL makes
them cheap and never blocked by the writer); every write goes through one
writer thread, so a commit's fsync never stalls the loop.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

from stowage import errors
from stowage.registry import locks, sqlite_intents, sqlite_purges, sqlite_uploads, sqlite_webhooks
from stowage.registry.base import (
    App,
    FileRecord,
    OverwriteIntent,
    UploadPart,
    UploadSession,
    WebhookDelivery,
)
from stowage.registry.sqlite_purges import SQLitePurges

T = TypeVar("T")
SCHEMA_VERSION = 1

SCHEMA = """
CREATE TABLE IF NOT EXISTS apps (
    api_key TEXT PRIMARY KEY,
    secret TEXT NOT NULL,
    name TEXT NOT NULL DEFAULT '',
    security INTEGER NOT NULL DEFAULT 0,
    storage TEXT NOT NULL DEFAULT '{}',
    webhooks TEXT NOT NULL DEFAULT '[]',
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS files (
    handle TEXT PRIMARY KEY,
    api_key TEXT NOT NULL,
    provider TEXT NOT NULL,
    location TEXT NOT NULL,
    container TEXT NOT NULL,
    key TEXT NOT NULL,
    filename TEXT NOT NULL,
    mimetype TEXT NOT NULL,
    size INTEGER NOT NULL DEFAULT 0,
    sha256 TEXT NOT NULL DEFAULT '',
    uploaded REAL NOT NULL,
    source_url TEXT,
    cloud INTEGER NOT NULL DEFAULT 0,
    access TEXT NOT NULL DEFAULT 'private',
    version INTEGER NOT NULL DEFAULT 1,
    state TEXT NOT NULL DEFAULT 'pending'
);
CREATE UNIQUE INDEX IF NOT EXISTS files_object
    ON files (api_key, provider, container, key);
CREATE INDEX IF NOT EXISTS files_by_app ON files (api_key, handle);
CREATE TABLE IF NOT EXISTS webhook_deliveries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id INTEGER NOT NULL,
    api_key TEXT NOT NULL,
    url TEXT NOT NULL,
    action TEXT NOT NULL,
    handle TEXT NOT NULL,
    body TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt REAL NOT NULL DEFAULT 0,
    lease_until REAL NOT NULL DEFAULT 0,
    response_code INTEGER,
    last_error TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL,
    updated REAL NOT NULL DEFAULT 0,
    claimed_by TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS webhook_due ON webhook_deliveries (status, next_attempt);
CREATE INDEX IF NOT EXISTS webhook_by_app ON webhook_deliveries (api_key, id);
"""

FILE_COLUMNS = (
    "handle, api_key, provider, location, container, key, filename, mimetype, size, sha256, "
    "uploaded, source_url, cloud, access, version"
)


class SQLiteRegistry(SQLitePurges):
    def __init__(self, path: Path) -> None:
        self.path = path
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="registry-writer")
        self._write_conn: sqlite3.Connection | None = None
        self._read_conn: sqlite3.Connection | None = None
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    # -- lifecycle -------------------------------------------------------------
    async def open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        (self.path.parent / "locks").mkdir(exist_ok=True)
        await self._write(self._open_writer)
        self._read_conn = self._connect()

    def _open_writer(self) -> None:
        conn = self._connect()
        conn.executescript(SCHEMA)
        conn.executescript(sqlite_uploads.SCHEMA)
        conn.executescript(sqlite_intents.SCHEMA)  # IF NOT EXISTS: older files gain it here
        conn.executescript(sqlite_purges.SCHEMA)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        self._write_conn = conn

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA busy_timeout = 30000")
        return conn

    async def close(self) -> None:
        if self._write_conn is not None:
            await self._write(self._write_conn.close)
        if self._read_conn is not None:
            self._read_conn.close()
        self._writer.shutdown(wait=True)

    async def ping(self) -> None:
        try:
            self._rows("SELECT 1")
        except (sqlite3.Error, AssertionError) as exc:
            raise errors.RegistryUnavailable(f"SQLite does not answer: {exc}") from exc

    async def _write(self, fn: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._writer, fn)

    def _execute(self, sql: str, params: tuple[Any, ...] = ()) -> int:
        assert self._write_conn is not None
        return self._write_conn.execute(sql, params).rowcount

    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        assert self._read_conn is not None
        return self._read_conn.execute(sql, params).fetchall()

    # -- apps ------------------------------------------------------------------
    async def create_app(self, app: App) -> None:
        def insert() -> None:
            try:
                self._execute("INSERT INTO apps VALUES (?, ?, ?, ?, ?, ?, ?)", _app_row(app))
            except sqlite3.IntegrityError as exc:
                raise errors.Conflict("an app with this key exists") from exc

        await self._write(insert)

    async def get_app(self, api_key: str) -> App | None:
        rows = self._rows("SELECT * FROM apps WHERE api_key = ?", (api_key,))
        return _app(rows[0]) if rows else None

    async def list_apps(self) -> list[App]:
        return [_app(r) for r in self._rows("SELECT * FROM apps ORDER BY created")]

    async def update_app(self, app: App) -> None:
        row = _app_row(app)
        await self._write(
            lambda: self._execute(
                "UPDATE apps SET secret=?, name=?, security=?, storage=?, webhooks=?, created=? "
                "WHERE api_key=?",
                (*row[1:], row[0]),
            )
        )

    async def delete_app(self, api_key: str) -> bool:
        count = await self._write(
            lambda: self._execute("DELETE FROM apps WHERE api_key = ?", (api_key,))
        )
        return count > 0

    # -- files -----------------------------------------------------------------
    async def reserve(self, record: FileRecord) -> None:
        def insert() -> None:
            try:
                self._execute(
                    f"INSERT INTO files ({FILE_COLUMNS}, state) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending')",
                    record.values(),
                )
            except sqlite3.IntegrityError as exc:
                raise errors.KeyInUse(key=record.key, container=record.container) from exc

        await self._write(insert)

    async def commit(self, record: FileRecord) -> None:
        await self._write(lambda: self._update_row(record, "state = 'stored'"))

    async def abandon(self, handle: str) -> None:
        await self._write(
            lambda: self._execute(
                "DELETE FROM files WHERE handle = ? AND state = 'pending'", (handle,)
            )
        )

    async def get(self, handle: str) -> FileRecord | None:
        rows = self._rows(
            f"SELECT {FILE_COLUMNS} FROM files WHERE handle = ? AND state = 'stored'", (handle,)
        )
        return _file(rows[0]) if rows else None

    async def update(self, record: FileRecord) -> bool:
        def update() -> int:
            return self._update_row(record, "state = 'stored'", True)

        count = await self._write(
            lambda: sqlite_intents.update_row(self._conn(), update, record.handle, record.version)
        )
        return count > 0

    def _update_row(self, record: FileRecord, state_sql: str, stored_only: bool = False) -> int:
        row = record.values()
        where = "handle = ?" + (" AND state = 'stored'" if stored_only else "")
        return self._execute(
            "UPDATE files SET filename=?, mimetype=?, size=?, sha256=?, uploaded=?, "
            f"source_url=?, cloud=?, access=?, version=?, {state_sql} WHERE {where}",
            (*row[6:], record.handle),
        )

    async def delete(self, handle: str) -> bool:
        count = await self._write(
            lambda: self._execute(
                "DELETE FROM files WHERE handle = ? AND state = 'stored'", (handle,)
            )
        )
        return count > 0

    async def list_files(
        self, api_key: str, after: str | None = None, limit: int = 100
    ) -> list[FileRecord]:
        rows = self._rows(
            f"SELECT {FILE_COLUMNS} FROM files WHERE api_key = ? AND state = 'stored' "
            "AND handle > ? ORDER BY handle LIMIT ?",
            (api_key, after or "", limit),
        )
        return [_file(r) for r in rows]

    async def pending(self, older_than: float) -> list[FileRecord]:
        rows = self._rows(
            f"SELECT {FILE_COLUMNS} FROM files WHERE state = 'pending' AND uploaded < ?",
            (older_than * 1000,),
        )
        return [_file(r) for r in rows]

    async def all_files(self) -> AsyncIterator[FileRecord]:
        after = ""
        while True:
            rows = self._rows(
                f"SELECT {FILE_COLUMNS} FROM files WHERE state = 'stored' AND handle > ? "
                "ORDER BY handle LIMIT 500",
                (after,),
            )
            for row in rows:
                yield _file(row)
            if len(rows) < 500:
                return
            after = rows[-1][0]

    # -- overwrite intents (SQL in sqlite_intents.py) ----------------------------
    async def intend_overwrite(self, intent: OverwriteIntent) -> bool:
        return await self._write(lambda: sqlite_intents.intend(self._conn(), intent))

    async def overwrite_intents(self, older_than: float) -> list[OverwriteIntent]:
        assert self._read_conn is not None
        return sqlite_intents.listed(self._read_conn, older_than)

    async def settle_overwrite(self, intent: OverwriteIntent, adopt: bool) -> bool:
        return await self._write(lambda: sqlite_intents.settle(self._conn(), intent, adopt))

    # -- webhook deliveries (SQL in sqlite_webhooks.py) ---------------------------
    async def enqueue_webhooks(self, deliveries: list[WebhookDelivery]) -> list[WebhookDelivery]:
        return await self._write(lambda: sqlite_webhooks.enqueue(self._conn(), deliveries))

    async def claim_webhooks(
        self, worker: str, now: float, lease: float, limit: int
    ) -> list[WebhookDelivery]:
        return await self._write(
            lambda: sqlite_webhooks.claim(self._conn(), worker, now, lease, limit)
        )

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
        values = (status, next_attempt, response_code, error, now, delivery_id, worker)
        return await self._write(lambda: sqlite_webhooks.finish(self._conn(), values))

    async def webhook_log(
        self, api_key: str | None = None, limit: int = 50
    ) -> list[WebhookDelivery]:
        assert self._read_conn is not None
        return sqlite_webhooks.log(self._read_conn, api_key, limit)

    async def prune_webhooks(self, before: float) -> int:
        return await self._write(lambda: sqlite_webhooks.prune(self._conn(), before))

    async def webhook_queue_depth(self) -> int:
        """Deliveries waiting or being delivered (the ``/metrics`` gauge)."""
        rows = self._rows(
            "SELECT count(*) FROM webhook_deliveries WHERE status IN ('pending', 'delivering')"
        )
        return int(rows[0][0])

    def _conn(self) -> sqlite3.Connection:
        assert self._write_conn is not None
        return self._write_conn

    # -- multipart uploads (SQL in sqlite_uploads.py) ----------------------------
    async def create_upload(self, session: UploadSession) -> None:
        await self._write(lambda: sqlite_uploads.create(self._writer_conn(), session))

    async def get_upload(self, upload_id: str) -> UploadSession | None:
        assert self._read_conn is not None
        return sqlite_uploads.get(self._read_conn, upload_id)

    async def put_upload_part(self, part: UploadPart) -> None:
        await self._write(lambda: sqlite_uploads.put_part(self._writer_conn(), part))

    async def upload_parts(self, upload_id: str) -> list[UploadPart]:
        assert self._read_conn is not None
        return sqlite_uploads.parts(self._read_conn, upload_id)

    async def finish_upload(self, upload_id: str, handle: str) -> bool:
        return await self._write(
            lambda: sqlite_uploads.finish(self._writer_conn(), upload_id, handle)
        )

    async def delete_upload(self, upload_id: str) -> None:
        await self._write(lambda: sqlite_uploads.delete(self._writer_conn(), upload_id))

    async def expired_uploads(self, created_before: float) -> list[UploadSession]:
        assert self._read_conn is not None
        return sqlite_uploads.expired(self._read_conn, created_before)

    def _writer_conn(self) -> sqlite3.Connection:
        assert self._write_conn is not None
        return self._write_conn

    # -- locking ---------------------------------------------------------------
    @asynccontextmanager
    async def handle_lock(self, handle: str) -> AsyncIterator[None]:
        # Worker processes share the registry: the file lock serialises them; the
        # in-process lock first keeps one waiter per handle per process polling it.
        lock, users = self._locks.get(handle, (asyncio.Lock(), 0))
        self._locks[handle] = (lock, users + 1)
        try:
            async with lock, locks.file_lock(self.path.parent / "locks", handle):
                yield
        finally:
            lock, users = self._locks[handle]
            if users == 1:
                del self._locks[handle]
            else:
                self._locks[handle] = (lock, users - 1)

    @asynccontextmanager
    async def exclusive(self, job: str) -> AsyncIterator[bool]:
        path = locks.lock_path(self.path.parent / "locks", f"job:{job}")
        fd = locks.try_acquire(path)
        try:
            yield fd is not None
        finally:
            if fd is not None:
                locks.release(path, fd)


def _app_row(app: App) -> tuple[Any, ...]:
    return (
        app.api_key,
        app.secret,
        app.name,
        int(app.security),
        json.dumps(app.storage),
        json.dumps(app.webhooks),
        app.created,
    )


def _app(row: tuple[Any, ...]) -> App:
    key, secret, name, security, storage, webhooks, created = row
    return App(
        key, secret, name, bool(security), json.loads(storage), json.loads(webhooks), created
    )


def _file(row: tuple[Any, ...]) -> FileRecord:
    values = list(row)
    values[12] = bool(values[12])
    return FileRecord(*values)
