-- What an overwrite will write into a file's row, recorded before the provider commits the
-- new bytes and dropped by the row update (registry/base.py: OverwriteIntent). One left by
-- a crash is settled by start-up recovery or the janitor from what storage holds.
CREATE TABLE overwrite_intents (
    handle TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    size BIGINT NOT NULL,
    sha256 TEXT NOT NULL,
    mimetype TEXT NOT NULL,
    created DOUBLE PRECISION NOT NULL
);
CREATE INDEX overwrite_intents_by_age ON overwrite_intents (created);
