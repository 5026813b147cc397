"""Prometheus metrics on ``prometheus_client``.

With several workers (``serve --workers N``) each process writes its values to files in
a private directory (the library's multiprocess mode, set up by
:mod:`stowage.observe.multiproc`), and every scrape sums them over all workers, whichever
worker answers it. With one worker the values live in memory. ``prometheus_client`` is
imported at the first use of a metric, never by declaring one, so that ``serve`` can set
the directory up after importing the modules that declare metrics.

Declare a metric once, at module level, and pass labels as keywords::

    HITS = metrics.Counter("stowage_cache_lookups_total", "Cache lookups.", ("result",))
    HITS.inc(result="hit")

Label names given up front make the family show before its first sample (single
process); left out, they are taken from the first use. A gauge says how the workers'
values combine (``aggregate``: ``livesum``, ``livemax``, ``livemostrecent``...); see
the table in docs/operations.md.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from stowage.observe.multiproc import ENV

if TYPE_CHECKING:
    import prometheus_client as prom

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

P = TypeVar("P", "prom.Counter", "prom.Gauge", "prom.Histogram")
Aggregate = Literal["livesum", "livemax", "livemin", "livemostrecent", "sum", "max", "mostrecent"]
# Every family declared, so that the exposition can create those not yet used.
_FAMILIES: list[_Family[Any]] = []


@functools.cache
def _own() -> prom.CollectorRegistry:
    """Our registry, created at first use: prometheus_client picks its value store (memory
    or the workers' files) when it is imported, so it must not be imported before
    ``serve`` has set up the workers' directory; declaring a metric does not import it."""
    import prometheus_client as prom

    # ``_created`` series are dropped in multiprocess mode; drop them always, for one output.
    prom.disable_created_metrics()  # type: ignore[no-untyped-call]
    # Ours only: no process_/python_ collectors, which differ between the two modes.
    return prom.CollectorRegistry(auto_describe=True)


class _Family(Generic[P]):
    def __init__(self, name: str, help: str, labels: Sequence[str] | None = None) -> None:
        self.name, self.help = name, help
        self._labels = None if labels is None else tuple(labels)
        self._metric: P | None = None
        self._children: dict[tuple[tuple[str, str], ...], P] = {}
        _FAMILIES.append(self)

    def _make(self, labels: tuple[str, ...]) -> P:
        raise NotImplementedError

    def _created(self) -> None:
        if self._metric is None and self._labels is not None:
            self._metric = self._make(self._labels)

    def _child(self, labels: dict[str, str]) -> P:
        # prometheus_client's ``labels`` checks and locks on every call (about 10 us, on
        # every request's path): each child is looked up there once, then kept here.
        key = tuple(labels.items())
        child = self._children.get(key)
        if child is None:
            if self._metric is None:
                self._metric = self._make(self._labels or tuple(sorted(labels)))
            child = self._metric.labels(**labels) if labels else self._metric
            self._children[key] = child
        return child


class Counter(_Family["prom.Counter"]):
    def _make(self, labels: tuple[str, ...]) -> prom.Counter:
        import prometheus_client as prom

        return prom.Counter(self.name, self.help, labels, registry=_own())

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        self._child(labels).inc(amount)

    def value(self, **labels: str) -> float:
        """This process's count for these labels (tests; a scrape sums every worker)."""
        sample = self.name if self.name.endswith("_total") else f"{self.name}_total"
        return _own().get_sample_value(sample, labels) or 0.0


class Gauge(_Family["prom.Gauge"]):
    def __init__(
        self,
        name: str,
        help: str,
        labels: Sequence[str] | None = None,
        *,
        aggregate: Aggregate = "livesum",
    ) -> None:
        self.aggregate = aggregate
        super().__init__(name, help, labels)

    def _make(self, labels: tuple[str, ...]) -> prom.Gauge:
        import prometheus_client as prom

        return prom.Gauge(
            self.name, self.help, labels, registry=_own(), multiprocess_mode=self.aggregate
        )

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        self._child(labels).inc(amount)

    def set(self, value: float, **labels: str) -> None:
        self._child(labels).set(value)


class Histogram(_Family["prom.Histogram"]):
    def __init__(
        self,
        name: str,
        help: str,
        labels: Sequence[str] | None = None,
        *,
        buckets: Sequence[float] = LATENCY_BUCKETS,
    ) -> None:
        self.buckets = tuple(buckets)
        super().__init__(name, help, labels)

    def _make(self, labels: tuple[str, ...]) -> prom.Histogram:
        import prometheus_client as prom

        return prom.Histogram(self.name, self.help, labels, registry=_own(), buckets=self.buckets)

    def observe(self, value: float, **labels: str) -> None:
        self._child(labels).observe(value)


M = TypeVar("M", Counter, Gauge, Histogram)


class Registry:
    """Where a module's metrics are listed. Every metric registers itself with the
    exposition on creation, so the list is bookkeeping only (kept for the call sites
    that use ``add`` or extend ``metrics``)."""

    def __init__(self) -> None:
        self.metrics: list[Counter | Gauge | Histogram] = []

    def add(self, metric: M) -> M:
        self.metrics.append(metric)
        return metric

    def render(self) -> bytes:
        return render()


def render() -> bytes:
    """The text exposition of every metric: summed over all workers when there are several."""
    import prometheus_client as prom
    from prometheus_client import multiprocess

    own = _own()
    for family in _FAMILIES:
        family._created()
    if os.environ.get(ENV):
        # A fresh registry per scrape, as the library asks: it reads the files as they are now.
        merged = prom.CollectorRegistry()
        multiprocess.MultiProcessCollector(merged)  # type: ignore[no-untyped-call]
        return prom.generate_latest(merged)
    return prom.generate_latest(own)
