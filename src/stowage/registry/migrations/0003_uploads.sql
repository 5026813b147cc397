-- Multipart upload sessions and their received pieces (registry/base.py: UploadSession).
CREATE TABLE uploads (
    upload_id TEXT PRIMARY KEY,
    api_key TEXT NOT NULL,
    provider TEXT NOT NULL,
    filename TEXT NOT NULL,
    mimetype TEXT NOT NULL,
    size BIGINT NOT NULL,
    path TEXT,
    container TEXT,
    access TEXT NOT NULL,
    part_key TEXT NOT NULL,
    created DOUBLE PRECISION NOT NULL,
    state TEXT NOT NULL DEFAULT 'open',
    handle TEXT
);
CREATE INDEX uploads_by_age ON uploads (created);
CREATE TABLE upload_parts (
    upload_id TEXT NOT NULL,
    part INTEGER NOT NULL,
    "offset" BIGINT NOT NULL,
    size BIGINT NOT NULL,
    md5 TEXT NOT NULL,
    etag TEXT NOT NULL,
    PRIMARY KEY (upload_id, part, "offset")
);
