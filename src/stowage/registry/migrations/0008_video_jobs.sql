-- Video and audio conversions (registry/queues.py: VIDEO_JOBS, VideoJobs): one row per
-- source version and chain (the unique key), kept once finished to answer its status.
CREATE TABLE IF NOT EXISTS video_jobs (
    id BIGSERIAL PRIMARY KEY,
    key TEXT NOT NULL,
    uuid TEXT NOT NULL,
    handle TEXT NOT NULL,
    api_key TEXT NOT NULL,
    version BIGINT NOT NULL,
    chain TEXT NOT NULL,
    result TEXT,
    status TEXT NOT NULL DEFAULT 'pending',
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt DOUBLE PRECISION NOT NULL DEFAULT 0,
    lease_until DOUBLE PRECISION NOT NULL DEFAULT 0,
    claimed_by TEXT NOT NULL DEFAULT '',
    last_error TEXT NOT NULL DEFAULT '',
    created DOUBLE PRECISION NOT NULL,
    updated DOUBLE PRECISION NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX IF NOT EXISTS video_jobs_one_per ON video_jobs (key);
CREATE INDEX IF NOT EXISTS video_jobs_due ON video_jobs (status, next_attempt);
CREATE INDEX IF NOT EXISTS video_jobs_by_handle ON video_jobs (handle);

