"""A small Prometheus registry: counters, gauges and histograms with labels, rendered in
the text exposition format 0.0.4. Hand-written (about 100 lines) rather than
``prometheus_client``: a handful of metric families in one process needs no dependency."""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypeVar

Labels = tuple[tuple[str, str], ...]
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


def _labels(pairs: Labels, extra: str = "") -> str:
    parts = [f'{k}="{_escape(v)}"' for k, v in pairs]
    if extra:
        parts.append(extra)
    return "{" + ",".join(parts) + "}" if parts else ""


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _num(value: float) -> str:
    if value == math.inf:
        return "+Inf"
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


@dataclass
class Counter:
    name: str
    help: str
    kind: str = "counter"
    values: dict[Labels, float] = field(default_factory=dict)

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        key = tuple(sorted(labels.items()))
        self.values[key] = self.values.get(key, 0.0) + amount

    def set(self, value: float, **labels: str) -> None:
        self.values[tuple(sorted(labels.items()))] = value

    def lines(self) -> Iterable[str]:
        for key, value in sorted(self.values.items()):
            yield f"{self.name}{_labels(key)} {_num(value)}"


def Gauge(name: str, help: str) -> Counter:
    return Counter(name, help, kind="gauge")


@dataclass
class Histogram:
    name: str
    help: str
    buckets: tuple[float, ...] = LATENCY_BUCKETS
    kind: str = "histogram"
    series: dict[Labels, list[float]] = field(default_factory=dict)  # counts..., sum, count

    def observe(self, value: float, **labels: str) -> None:
        key = tuple(sorted(labels.items()))
        row = self.series.setdefault(key, [0.0] * (len(self.buckets) + 2))
        index = bisect.bisect_left(self.buckets, value)
        if index < len(self.buckets):
            row[index] += 1
        row[-2] += value
        row[-1] += 1

    def lines(self) -> Iterable[str]:
        for key, row in sorted(self.series.items()):
            running = 0.0
            for bound, count in zip(self.buckets, row, strict=False):
                running += count
                le = 'le="' + _num(bound) + '"'
                yield f"{self.name}_bucket{_labels(key, le)} {_num(running)}"
            inf = 'le="+Inf"'
            yield f"{self.name}_bucket{_labels(key, inf)} {_num(row[-1])}"
            yield f"{self.name}_sum{_labels(key)} {_num(row[-2])}"
            yield f"{self.name}_count{_labels(key)} {_num(row[-1])}"


Metric = Counter | Histogram
M = TypeVar("M", Counter, Histogram)


@dataclass
class Registry:
    metrics: list[Metric] = field(default_factory=list)

    def add(self, metric: M) -> M:
        self.metrics.append(metric)
        return metric

    def render(self) -> str:
        out: list[str] = []
        for metric in self.metrics:
            out.append(f"# HELP {metric.name} {metric.help}")
            out.append(f"# TYPE {metric.name} {metric.kind}")
            out.extend(metric.lines())
        return "\n".join(out) + "\n"
