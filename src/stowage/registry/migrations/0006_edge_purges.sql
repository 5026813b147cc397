-- Edge cache purges that a cache did not acknowledge, retried by a worker
-- (registry/base.py: EdgePurge, PurgeQueue). A row is deleted once the cache acknowledged.
CREATE TABLE edge_purges (
    id BIGSERIAL PRIMARY KEY,
    cache TEXT NOT NULL,
    tag TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt DOUBLE PRECISION NOT NULL DEFAULT 0,
    lease_until DOUBLE PRECISION NOT NULL DEFAULT 0,
    last_error TEXT NOT NULL DEFAULT '',
    created DOUBLE PRECISION NOT NULL,
    claimed_by TEXT NOT NULL DEFAULT ''
);
CREATE INDEX edge_purges_due ON edge_purges (next_attempt);
CREATE INDEX edge_purges_by_tag ON edge_purges (cache, tag);
