"""Rate-limit token buckets in PostgreSQL, so that every node spends the same budget.

One statement per decision: an upsert that refills the bucket by the time elapsed on the
database's clock (nodes' clocks may differ), takes a token when there is one, and says
whether it did. The row lock serialises concurrent requests of one key across nodes.
Buckets idle for a day are dropped now and then.
"""

from __future__ import annotations

import random

import asyncpg

_TAKE = """
WITH now AS (SELECT extract(epoch FROM clock_timestamp())::float8 AS t)
INSERT INTO rate_buckets AS b (key, tokens, stamp, allowed)
SELECT $1, $3 - 1, now.t, TRUE FROM now
ON CONFLICT (key) DO UPDATE SET
    allowed = least($3, b.tokens + (EXCLUDED.stamp - b.stamp) * $2) >= 1,
    tokens = least($3, b.tokens + (EXCLUDED.stamp - b.stamp) * $2)
        - CASE WHEN least($3, b.tokens + (EXCLUDED.stamp - b.stamp) * $2) >= 1
          THEN 1 ELSE 0 END,
    stamp = EXCLUDED.stamp
RETURNING tokens, allowed
"""
_PRUNE = "DELETE FROM rate_buckets WHERE stamp < extract(epoch FROM clock_timestamp()) - 86400"


async def take(pool: asyncpg.Pool, key: str, rate: float, burst: float) -> tuple[float, bool]:
    """(tokens left, whether a token was taken) of bucket ``key``."""
    row = await pool.fetchrow(_TAKE, key, rate, burst)
    if random.random() < 0.0005:
        await pool.execute(_PRUNE)
    return float(row["tokens"]), bool(row["allowed"])
