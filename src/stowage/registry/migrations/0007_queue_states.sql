-- Every lease-based queue has the same standard columns (registry/queue.py: STANDARD):
-- the edge purge queue gains the states and update time webhook deliveries already have.
-- A row claimed by a node of the previous release is leased.
ALTER TABLE edge_purges ADD COLUMN status TEXT NOT NULL DEFAULT 'pending';
ALTER TABLE edge_purges ADD COLUMN updated DOUBLE PRECISION NOT NULL DEFAULT 0;
UPDATE edge_purges SET status = 'leased' WHERE claimed_by <> '';
CREATE INDEX edge_purges_waiting ON edge_purges (status, next_attempt);
