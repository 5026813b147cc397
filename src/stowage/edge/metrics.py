"""The edge tier's metrics; ``http/observe.py`` adds them to ``/metrics``."""

from __future__ import annotations

from stowage.observe import metrics

PURGES = metrics.Counter(
    "stowage_edge_purges_total",
    "Edge cache purges per cache by result: acked (acknowledged at once: a write's purge, "
    "or its echoes, 2 s later and when renders of the old version are over), queued (not "
    "acknowledged in time: retried from the registry), "
    "retried (a queued one acknowledged), failed (a retry that failed again).",
)
PURGE_SECONDS = metrics.Histogram(
    "stowage_edge_purge_seconds",
    "Time a write spent purging the edge caches.",
    buckets=(0.0005, 0.001, 0.002, 0.003, 0.004, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0),
)
# One queue in the shared registry, read by each worker: the latest reading, not a sum.
QUEUE = metrics.Gauge(
    "stowage_edge_purge_queue_depth",
    "Edge purges waiting to be retried.",
    aggregate="livemostrecent",
)
ALL = (PURGES, PURGE_SECONDS, QUEUE)
