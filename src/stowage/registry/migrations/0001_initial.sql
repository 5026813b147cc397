-- Apps and the handle -> stored object table (the same model as the SQLite registry).
CREATE TABLE apps (
    api_key TEXT PRIMARY KEY,
    secret TEXT NOT NULL,
    name TEXT NOT NULL DEFAULT '',
    security BOOLEAN NOT NULL DEFAULT FALSE,
    storage TEXT NOT NULL DEFAULT '{}',
    webhooks TEXT NOT NULL DEFAULT '[]',
    created DOUBLE PRECISION NOT NULL
);

CREATE TABLE files (
    handle TEXT PRIMARY KEY,
    api_key TEXT NOT NULL,
    provider TEXT NOT NULL,
    location TEXT NOT NULL,
    container TEXT NOT NULL,
    key TEXT NOT NULL,
    filename TEXT NOT NULL,
    mimetype TEXT NOT NULL,
    size BIGINT NOT NULL DEFAULT 0,
    sha256 TEXT NOT NULL DEFAULT '',
    uploaded DOUBLE PRECISION NOT NULL,
    source_url TEXT,
    cloud BOOLEAN NOT NULL DEFAULT FALSE,
    access TEXT NOT NULL DEFAULT 'private',
    version INTEGER NOT NULL DEFAULT 1,
    state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'stored'))
);

-- A key is claimed by one live or pending handle per app (KEY_IN_USE otherwise).
CREATE UNIQUE INDEX files_object ON files (api_key, provider, container, key);
CREATE INDEX files_by_app ON files (api_key, handle);
CREATE INDEX files_pending ON files (uploaded) WHERE state = 'pending';
