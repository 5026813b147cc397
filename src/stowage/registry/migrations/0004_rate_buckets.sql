-- Token buckets of the rate limiter, shared by every node (http/ratelimit.py).
-- UNLOGGED: counters are cheap to lose in a database crash and skip the WAL.
CREATE UNLOGGED TABLE rate_buckets (
    key TEXT PRIMARY KEY,
    tokens DOUBLE PRECISION NOT NULL,
    stamp DOUBLE PRECISION NOT NULL,
    allowed BOOLEAN NOT NULL
);
CREATE INDEX rate_buckets_by_age ON rate_buckets (stamp);
