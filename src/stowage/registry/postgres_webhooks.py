"""SQL of the webhook delivery queue and log in the PostgreSQL registry.

A claim is one ``UPDATE ... WHERE id IN (SELECT ... FOR UPDATE SKIP LOCKED)``: workers
on any number of nodes each take rows no other worker holds, without waiting on each
other. ``finish`` only succeeds for the worker that holds the claim.
"""

from __future__ import annotations

from dataclasses import replace

import asyncpg

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


async def enqueue(pool: asyncpg.Pool, deliveries: list[WebhookDelivery]) -> list[WebhookDelivery]:
    done: list[WebhookDelivery] = []
    async with pool.acquire() as conn, conn.transaction():
        for d in deliveries:
            new_id = await conn.fetchval(
                "INSERT INTO webhook_deliveries (event_id, api_key, url, action, handle, body, "
                "status, next_attempt, created, updated) "
                "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) RETURNING id",
                d.event_id,
                d.api_key,
                d.url,
                d.action,
                d.handle,
                d.body,
                WEBHOOK_PENDING,
                d.next_attempt,
                d.created,
            )
            done.append(replace(d, id=int(new_id), status=WEBHOOK_PENDING))
    return done


async def claim(
    pool: asyncpg.Pool, worker: str, now: float, lease: float, limit: int
) -> list[WebhookDelivery]:
    rows = await pool.fetch(
        "UPDATE webhook_deliveries SET status = $1, claimed_by = $2, lease_until = $3, "
        "attempts = attempts + 1, updated = $4 WHERE id IN ("
        "  SELECT id FROM webhook_deliveries"
        "  WHERE (status = $5 AND next_attempt <= $4) OR (status = $1 AND lease_until <= $4)"
        "  ORDER BY next_attempt, id LIMIT $6 FOR UPDATE SKIP LOCKED"
        f") RETURNING {COLUMNS}",
        WEBHOOK_DELIVERING,
        worker,
        now + lease,
        now,
        WEBHOOK_PENDING,
        limit,
    )
    return sorted((_delivery(r) for r in rows), key=lambda d: d.id)


async def finish(
    pool: asyncpg.Pool,
    delivery_id: int,
    worker: str,
    status: str,
    now: float,
    next_attempt: float,
    response_code: int | None,
    error: str,
) -> bool:
    if status not in (WEBHOOK_PENDING, WEBHOOK_DELIVERED, WEBHOOK_FAILED):
        raise ValueError(f"not a final or retry state: {status}")
    result = await pool.execute(
        "UPDATE webhook_deliveries SET status = $1, next_attempt = $2, response_code = $3, "
        "last_error = $4, updated = $5, lease_until = 0, claimed_by = '' "
        "WHERE id = $6 AND claimed_by = $7 AND status = 'delivering'",
        status,
        next_attempt,
        response_code,
        error,
        now,
        delivery_id,
        worker,
    )
    return str(result).endswith(" 1")


async def log(pool: asyncpg.Pool, api_key: str | None, limit: int) -> list[WebhookDelivery]:
    if api_key:
        rows = await pool.fetch(
            f"SELECT {COLUMNS} FROM webhook_deliveries WHERE api_key = $1 "
            "ORDER BY id DESC LIMIT $2",
            api_key,
            limit,
        )
    else:
        rows = await pool.fetch(
            f"SELECT {COLUMNS} FROM webhook_deliveries ORDER BY id DESC LIMIT $1", limit
        )
    return [_delivery(r) for r in rows]


async def prune(pool: asyncpg.Pool, before: float) -> int:
    result = await pool.execute(
        "DELETE FROM webhook_deliveries WHERE status IN ($1, $2) AND updated < $3",
        WEBHOOK_DELIVERED,
        WEBHOOK_FAILED,
        before,
    )
    return int(str(result).rsplit(" ", 1)[-1])


def _delivery(row: asyncpg.Record) -> WebhookDelivery:
    return WebhookDelivery(*row.values())
