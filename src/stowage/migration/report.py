"""What a run of import or migrate did, file by file, and the bounded pool that runs it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
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
    outcomes: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def count(self, status: str) -> int:
        return sum(1 for o in self.outcomes if o.status == status)

    def as_json(self) -> dict[str, Any]:
        return {
            IMPORTED: self.count(IMPORTED),
            SKIPPED: self.count(SKIPPED),
            FAILED: self.count(FAILED),
            "bytes_imported": sum(o.size for o in self.outcomes if o.status == IMPORTED),
            "seconds": round(self.seconds, 3),
            **self.extra,
            "failures": [
                {"handle": o.handle, "reason": o.reason}
                for o in self.outcomes
                if o.status == FAILED
            ],
        }


async def each(
    items: Iterable[T],
    concurrency: int,
    job: Callable[[T], Awaitable[Outcome]],
    on_outcome: Callable[[Outcome], None],
) -> Report:
    """Runs ``job`` on every item, ``concurrency`` at a time; ``job`` never raises (it
    turns a failure into an outcome)."""
    report = Report()
    started = time.monotonic()
    pending = iter(items)

    async def worker() -> None:
        for item in pending:  # one shared iterator: each item is taken once
            outcome = await job(item)
            report.outcomes.append(outcome)
            on_outcome(outcome)

    await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
    report.seconds = time.monotonic() - started
    return report
