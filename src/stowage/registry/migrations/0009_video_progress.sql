-- A running video job's progress (registry/queues.py: VIDEO_JOBS's ``progress``), percent
-- done of its attempt as ffmpeg reports it; null until the first report.
ALTER TABLE video_jobs ADD COLUMN IF NOT EXISTS progress DOUBLE PRECISION;
