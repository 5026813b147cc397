"""SQL of the webhook delivery queue and log in the SQLite registry.

Writes run on the registry's writer thread, so a claim (one ``UPDATE ... RETURNING``)
is atomic against every other write: two workers never take the same row.
"""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from typing import Any

from stowage.registry.base import (
    WEBHOOK_DELIVERED,
    WEBHOOK_DELIVERING,
    WEBHOOK_FAILED,
    WEBHOOK_PENDING,
    WebhookDelivery,
)

COLUMNS = (
    "id, event_id, api_key, url, action, handle, body, status, attempts, next_attempt, "
    "lease_until, response_code, last_error, created, updated"
)


def enqueue(conn: sqlite3.Connection, deliveries: list[WebhookDelivery]) -> list[WebhookDelivery]:
    done: list[WebhookDelivery] = []
    conn.execute("BEGIN IMMEDIATE")
    try:
        for d in deliveries:
            cursor = conn.execute(
                "INSERT INTO webhook_deliveries (event_id, api_key, url, action, handle, body, "
                "status, next_attempt, created, updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    d.event_id,
                    d.api_key,
                    d.url,
                    d.action,
                    d.handle,
                    d.body,
                    WEBHOOK_PENDING,
                    d.next_attempt,
                    d.created,
                    d.created,
                ),
            )
            assert cursor.lastrowid is not None
            done.append(replace(d, id=cursor.lastrowid, status=WEBHOOK_PENDING))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return done


def claim(
    conn: sqlite3.Connection, worker: str, now: float, lease: float, limit: int
) -> list[WebhookDelivery]:
    rows = conn.execute(
        "UPDATE webhook_deliveries SET status = ?, claimed_by = ?, lease_until = ?, "
        "attempts = attempts + 1, updated = ? WHERE id IN ("
        "  SELECT id FROM webhook_deliveries"
        "  WHERE (status = ? AND next_attempt <= ?) OR (status = ? AND lease_until <= ?)"
        "  ORDER BY next_attempt, id LIMIT ?"
        f") RETURNING {COLUMNS}",
        (
            WEBHOOK_DELIVERING,
            worker,
            now + lease,
            now,
            WEBHOOK_PENDING,
            now,
            WEBHOOK_DELIVERING,
            now,
            limit,
        ),
    ).fetchall()
    return sorted((_delivery(r) for r in rows), key=lambda d: d.id)


def finish(conn: sqlite3.Connection, values: tuple[Any, ...]) -> bool:
    status = values[0]
    if status not in (WEBHOOK_PENDING, WEBHOOK_DELIVERED, WEBHOOK_FAILED):
        raise ValueError(f"not a final or retry state: {status}")
    cursor = conn.execute(
        "UPDATE webhook_deliveries SET status = ?, next_attempt = ?, response_code = ?, "
        "last_error = ?, updated = ?, lease_until = 0, claimed_by = '' "
        "WHERE id = ? AND claimed_by = ? AND status = 'delivering'",
        values,
    )
    return cursor.rowcount > 0


def log(conn: sqlite3.Connection, api_key: str | None, limit: int) -> list[WebhookDelivery]:
    where, params = ("WHERE api_key = ?", (api_key,)) if api_key else ("", ())
    rows = conn.execute(
        f"SELECT {COLUMNS} FROM webhook_deliveries {where} ORDER BY id DESC LIMIT ?",
        (*params, limit),
    ).fetchall()
    return [_delivery(r) for r in rows]


def prune(conn: sqlite3.Connection, before: float) -> int:
    return conn.execute(
        "DELETE FROM webhook_deliveries WHERE status IN (?, ?) AND updated < ?",
        (WEBHOOK_DELIVERED, WEBHOOK_FAILED, before),
    ).rowcount


def _delivery(row: tuple[Any, ...]) -> WebhookDelivery:
    return WebhookDelivery(*row)
