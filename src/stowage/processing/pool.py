"""A bounded pool of transformation jobs, off the event loop.

Each job runs on a thread of its own (libvips releases the GIL while it computes, so
jobs use every core). At most ``jobs`` run at once and at most ``queue`` more wait; any
request beyond is refused at once with 503 and ``Retry-After`` rather than queued
without bound. A job's slot is held until its thread has really finished, also when
the request that wanted it has gone, so the pool never runs more threads than slots.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from stowage import errors
from stowage.processing import metrics

T = TypeVar("T")
RETRY_AFTER_SECONDS = 1
_GRACE_SECONDS = 5.0  # past the engine's own deadline, before the wait gives up


class JobPool:
    def __init__(self, jobs: int, queue: int, seconds: float) -> None:
        self.jobs = jobs if jobs > 0 else (os.cpu_count() or 1)
        self._limit = self.jobs + max(0, queue)
        self._seconds = seconds
        self._admitted = 0
        self._slots = asyncio.Semaphore(self.jobs)
        self._executor = ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="vips")

    async def run(self, job: Callable[[], T]) -> T:
        if self._admitted >= self._limit:
            metrics.REFUSALS.inc(code=errors.ProcessingBusy.code)
            busy = errors.ProcessingBusy(jobs=self.jobs)
            busy.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
            raise busy
        self._admitted += 1
        try:
            await self._slots.acquire()
        except BaseException:
            self._admitted -= 1
            raise
        future = asyncio.get_running_loop().run_in_executor(self._executor, job)
        future.add_done_callback(self._finished)
        try:
            return await asyncio.wait_for(asyncio.shield(future), self._seconds + _GRACE_SECONDS)
        except TimeoutError as exc:
            raise errors.ProcessingTimeout(seconds=self._seconds) from exc

    def _finished(self, _: object) -> None:
        self._admitted -= 1
        self._slots.release()

    @property
    def busy(self) -> int:
        return self._admitted

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
