"""SQLite registry: the embedded default, one object per concern on one store (``db.py``)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from stowage.registry.composed import ComposedRegistry
from stowage.registry.queues import (
    PURGES,
    VIDEO_JOBS,
    WEBHOOKS,
    EdgePurges,
    VideoJobs,
    WebhookDeliveries,
)
from stowage.registry.sqlite import apps, files, intents, uploads
from stowage.registry.sqlite.apps import SQLiteApps
from stowage.registry.sqlite.db import SQLiteDB
from stowage.registry.sqlite.files import SQLiteFiles
from stowage.registry.sqlite.intents import SQLiteIntents
from stowage.registry.sqlite.locks import SQLiteLocks
from stowage.registry.sqlite.queue import SQLiteQueue
from stowage.registry.sqlite.uploads import SQLiteUploads
from stowage.registry.sqlite.webhooks import SQLiteWebhookLog

#: ``PRAGMA user_version``; 2 gave ``edge_purges`` the standard queue states.
SCHEMA_VERSION = 2


class SQLiteRegistry(ComposedRegistry):
    def __init__(self, path: Path) -> None:
        self.path = path
        locks = SQLiteLocks(path.parent / "locks")
        db = SQLiteDB(path, SCHEMA_VERSION, [])
        webhooks, purges = SQLiteQueue(db, WEBHOOKS), SQLiteQueue(db, PURGES)
        videos = SQLiteQueue(db, VIDEO_JOBS)
        setups = [webhooks.setup, purges.setup, videos.setup]
        db.setups += [lambda _conn: locks.setup(), _tables, *setups]
        super().__init__(
            db,
            SQLiteApps(db),
            SQLiteFiles(db),
            SQLiteIntents(db),
            locks,
            SQLiteUploads(db),
            WebhookDeliveries(webhooks, SQLiteWebhookLog(db)),
            EdgePurges(purges),
            VideoJobs(videos),
        )


def _tables(conn: sqlite3.Connection) -> None:
    for schema in (apps.SCHEMA, files.SCHEMA, uploads.SCHEMA, intents.SCHEMA):
        conn.executescript(schema)
