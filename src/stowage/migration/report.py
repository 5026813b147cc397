"""What a run of import or migrate did, and the bounded pool that runs it. A run keeps
counts and its failures, not an outcome per file: memory stays flat however many files."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")
IMPORTED, SKIPPED, FAILED = "imported", "skipped", "failed"


@dataclass(frozen=True)
class Outcome:
    handle: str
    status: str  # IMPORTED (copied), SKIPPED or FAILED
    reason: str = ""
    size: int = 0


@dataclass
class Report:
    counts: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys((IMPORTED, SKIPPED, FAILED), 0)
    )
    bytes_imported: int = 0
    failures: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def add(self, outcome: Outcome) -> None:
        self.counts[outcome.status] += 1
        if outcome.status == IMPORTED:
            self.bytes_imported += outcome.size
        if outcome.status == FAILED:
            self.failures.append(outcome)

    def merge(self, other: Report) -> None:
        for status, count in other.counts.items():
            self.counts[status] += count
        self.bytes_imported += other.bytes_imported
        self.failures.extend(other.failures)
        self.seconds += other.seconds
        for name, value in other.extra.items():
            self.extra[name] = self.extra.get(name, 0) + value

    def count(self, status: str) -> int:
        return self.counts[status]

    def as_json(self) -> dict[str, Any]:
        return {
            **self.counts,
            "bytes_imported": self.bytes_imported,
            "seconds": round(self.seconds, 3),
            **self.extra,
            "failures": [{"handle": o.handle, "reason": o.reason} for o in self.failures],
        }


async def each(
    items: Iterable[T] | AsyncIterable[T],
    concurrency: int,
    job: Callable[[T], Awaitable[Outcome]],
    on_outcome: Callable[[Outcome], None],
) -> Report:
    """Runs ``job`` on every item, ``concurrency`` at a time, taking items as they come (a
    registry's pages are read as the work goes); ``job`` never raises (it turns a failure
    into an outcome)."""
    report = Report()
    started = time.monotonic()
    source = _aiter(items)
    taking = asyncio.Lock()  # one async iterator, many workers: one takes at a time

    async def worker() -> None:
        while True:
            async with taking:
                item = await anext(source, _END)
            if item is _END:
                return
            outcome = await job(item)
            report.add(outcome)
            on_outcome(outcome)

    await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
    report.seconds = time.monotonic() - started
    return report


_END: Any = object()


async def _aiter(items: Iterable[T] | AsyncIterable[T]) -> AsyncIterator[T]:
    if isinstance(items, AsyncIterable):
        async for item in items:
            yield item
    else:
        for item in items:
            yield item
