"""The processing engine's metrics; ``http.transform`` adds them to the /metrics registry."""

from __future__ import annotations

from stowage.observe import metrics

JOBS = metrics.Counter(
    "stowage_processing_jobs_total", "Transformation jobs run, by outcome (ok or error code)."
)
CACHE = metrics.Counter(
    "stowage_processing_cache_total", "Derivative cache lookups, by result (hit or miss)."
)
SECONDS = metrics.Histogram(
    "stowage_processing_job_seconds",
    "Seconds a transformation took from admission to its result, waiting for a job slot included.",
)
REFUSALS = metrics.Counter(
    "stowage_processing_refusals_total",
    "Transformations refused before or while running, by error code (limits, busy pool).",
)
BIG_JOBS = metrics.Counter(
    "stowage_processing_big_jobs_total",
    "Transformations whose estimated cost, a run past processing_small_job_seconds (or "
    "processing_small_drawing_seconds), or their source's earlier job made them big jobs "
    "(run in fewer slots).",
)
COST_FIT = metrics.Histogram(
    "stowage_processing_cost_fit",
    "CPU seconds a transformation job took over the seconds it was estimated at, for "
    "estimates of 0.1 s or more: how well the cost rates fit this machine.",
    buckets=(0.1, 0.2, 0.33, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0),
)
VIDEO_JOBS = metrics.Counter(
    "stowage_video_jobs_total",
    "video_convert jobs this node ended, by outcome (completed, failed, retry, returned, "
    "lost: its lease went to another node).",
)
VIDEO_SECONDS = metrics.Histogram(
    "stowage_video_job_seconds",
    "Seconds a video_convert job ran on this node, from its claim to its end.",
)
ALL = (JOBS, CACHE, SECONDS, REFUSALS, BIG_JOBS, COST_FIT, VIDEO_JOBS, VIDEO_SECONDS)
