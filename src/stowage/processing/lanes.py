"""The job pool's lanes (``pool.py``): their time limits, their admissions, and what a
refused request is told to wait (``Retry-After``). The Office converters (``office.py``)
admit their requests in a lane too.

Each lane admits its own requests: the small one ``jobs + queue``; the big one its slots
plus ``queue``; the drawn one (jobs estimated small whose source is an SVG, a PDF: their
cost is a guess) as many. Big jobs waiting for their single slot once filled the one
count all shared, and small jobs were refused while the slot kept for them was idle (a
probe's 24 clients of costly chains: 125 of 133 small resizes answered 503).
``Retry-After`` is the lane's expected wait: the jobs ahead of a new one and itself,
times the lane's recent run time, over its slots, in whole seconds from 1 to 30 (it was
always 1, also after 10 s in a queue behind a 30 s job, which invited retries that
filled the queue again). Before any job of the lane has finished (a restarted node) a
job is taken to run the lane's time limit (``prior``): a probe's burst right after a
restart was told 1 s while 16 jobs, 19 s of work, waited in one slot. The limit is an
upper bound; a wait too long costs a client seconds, one too short brings its retries
back into the full queue.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from stowage import errors
from stowage.core import filetypes
from stowage.processing import metrics

RETRY_AFTER_LEAST = 1
RETRY_AFTER_MOST = 30
#: Weight of the latest run in a lane's recent run time (an exponential mean).
RECENT_WEIGHT = 0.2


@dataclass(frozen=True)
class Lanes:
    """How long a job estimated small may hold a small job's slot before it is run again
    as a big one, how long any job may wait for a slot (503 beyond), and how long a job
    whose source is drawn (``drawn``: an SVG, a PDF) may hold one."""

    small_seconds: float = math.inf
    wait_seconds: float = math.inf
    drawn_seconds: float = math.inf


class Lane:
    """One lane's admitted requests (running or waiting) and its recent run time."""

    def __init__(self, name: str, slots: int, limit: int, prior: float = 0.0) -> None:
        self.name = name
        self.slots = max(1, slots)
        self.limit = limit
        self.admitted = 0
        self.recent = 0.0  # seconds a job of this lane ran, recently (0: none yet)
        #: Seconds a job is taken to run before one has finished: the lane's time limit.
        self.prior = prior

    def admit(self, jobs: int) -> None:
        """One more request in the lane, or 503 at once when it is full."""
        if self.admitted >= self.limit:
            raise self.busy(jobs)
        self.admitted += 1

    def leave(self) -> None:
        self.admitted -= 1

    def ran(self, seconds: float) -> None:
        weight = RECENT_WEIGHT if self.recent else 1.0
        self.recent += weight * (seconds - self.recent)

    def retry_after(self) -> int:
        """Seconds until a slot of the lane is likely free for one more request."""
        ahead = max(0, self.admitted - self.slots) + 1
        each = min(self.recent or self.prior, RETRY_AFTER_MOST * self.slots)  # inf: the most
        expected = math.ceil(ahead * each / self.slots)
        return max(RETRY_AFTER_LEAST, min(RETRY_AFTER_MOST, expected))

    def busy(self, jobs: int) -> errors.ProcessingBusy:
        metrics.REFUSALS.inc(code=errors.ProcessingBusy.code)
        refused = errors.ProcessingBusy(jobs=jobs)
        refused.headers["Retry-After"] = str(self.retry_after())
        return refused


def drawn(source: Path) -> bool:
    """Whether the source is drawn, not decoded: an SVG, a PDF (a document's too), or what
    no raster's signature names. Its header gives a raster's cost in milliseconds, not
    how long a drawing takes: a 286-byte SVG filter was estimated at 0.8 s and drew for
    minutes, and a 4.9 MB SVG took 1 s of its slot to be parsed and estimated."""
    try:
        with source.open("rb") as file:
            kind = filetypes.sniff(file.read(filetypes.SNIFF_BYTES))
    except OSError:
        return False
    return kind is None or not kind.startswith("image/") or kind == "image/svg+xml"
