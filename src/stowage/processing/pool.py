"""A bounded pool of transformation jobs, each run in a job process (``worker.py``).

At most ``jobs`` run at once and at most ``queue`` more wait; any request beyond is
refused at once with 503 and ``Retry-After`` rather than queued without bound. A job
whose estimated cost (``cost.py``) makes it a big one is run in at most ``jobs -
small_slots`` slots at once, so that small jobs always find a slot a big one cannot take.

Why processes and not threads: libvips checks whether it should stop only between tiles
of the result, so a chain whose small result depends on a large, slow intermediate (an
upscale, a rotation, then a heavy blur, shrunk to 10 pixels) would hold a thread, a core
and its memory long past the deadline. A job process past its deadline is killed and a
new one started in its place, so a slot is never held longer than the deadline and a
grace. A process also contains what a crafted image could do to libvips: a crash ends
the job with a 422, and an address-space limit refuses a runaway allocation.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import os
import pickle
import sys

from stowage import errors
from stowage.processing import metrics, sandbox
from stowage.processing.base import BigJob, Job, Rendered
from stowage.processing.worker import LENGTH, frame

RETRY_AFTER_SECONDS = 1
_GRACE_SECONDS = 2.0  # past the engine's own deadline, before its process is killed
_REAP_SECONDS = 10.0  # after SIGKILL, for the process's exit to be reported
log = logging.getLogger(__name__)


class JobPool:
    def __init__(
        self,
        jobs: int,
        queue: int,
        seconds: float,
        memory: int,
        small_slots: int = 0,
        pillow_jpeg: bool = True,
    ) -> None:
        self.jobs = jobs if jobs > 0 else (os.cpu_count() or 1)
        self._limit = self.jobs + max(0, queue)
        self._seconds = seconds
        self._admitted = 0
        self._slots = asyncio.Semaphore(self.jobs)
        # Big jobs (base.BigJob) run in at most this many slots at once: the others are
        # kept for small jobs, which then never wait behind big ones.
        self._big = asyncio.Semaphore(max(1, self.jobs - max(0, small_slots)))
        # libvips' threads per job: one each when the pool already runs a job per core.
        threads = max(1, (os.cpu_count() or 1) // self.jobs)
        worker = [*_jail(), sys.executable, "-m", "stowage.processing.worker"]
        self._argv = [*worker, str(threads), str(memory), "1" if pillow_jpeg else "0"]
        self._idle: list[_Process] = []
        self._all: set[_Process] = set()
        self._closed = False

    async def run(self, job: Job) -> Rendered:
        if self._admitted >= self._limit:
            metrics.REFUSALS.inc(code=errors.ProcessingBusy.code)
            busy = errors.ProcessingBusy(jobs=self.jobs)
            busy.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
            raise busy
        self._admitted += 1
        try:
            try:
                async with self._slots:
                    return await self._render(job)
            except BigJob:
                pass  # its header said so in milliseconds; it waits for a big job's slot
            metrics.BIG_JOBS.inc()
            big = dataclasses.replace(
                job, limits=dataclasses.replace(job.limits, big_cost=math.inf)
            )
            async with self._big, self._slots:
                return await self._render(big)
        finally:
            self._admitted -= 1

    async def _render(self, job: Job) -> Rendered:
        process = self._idle.pop() if self._idle else await self._start()
        try:
            async with asyncio.timeout(self._seconds + _GRACE_SECONDS):
                rendered = await process.render(job)
        except _Ended:
            self._all.discard(process)  # already gone
            raise
        except (errors.StowageError, BigJob):
            self._idle.append(process)  # the job was refused or deferred; its process is fine
            raise
        except BaseException as exc:  # past the deadline, or the server stopping
            await self._stop(process)
            if isinstance(exc, TimeoutError):
                raise errors.ProcessingTimeout(seconds=self._seconds) from exc
            raise
        self._idle.append(process)
        return rendered

    async def _start(self) -> _Process:
        if self._closed:  # a job that got its slot after close(): no process outlives it
            raise errors.ShuttingDown()
        process = await _Process.start(self._argv)
        if self._closed:
            await process.kill()
            raise errors.ShuttingDown()
        self._all.add(process)
        return process

    async def _stop(self, process: _Process) -> None:
        self._all.discard(process)
        await process.kill()

    @property
    def busy(self) -> int:
        return self._admitted

    async def close(self) -> None:
        self._closed = True
        self._idle.clear()
        for process in list(self._all):
            await self._stop(process)


#: glibc's malloc in a job process. Few arenas: each reserves 64 MiB of address space per
#: libvips thread, which counts against the job's limit without being used. Fixed
#: thresholds: a job's buffers (a decoded thumbnail, libjpeg's and libwebp's work areas,
#: a few MiB) stay in the heap between jobs instead of being unmapped after each and
#: faulted in again, some 400 page faults and 0.8 ms of CPU per 12 MP thumbnail
#: (docs/decisions.md, "Job processes keep their malloc heap").
#: An operator's own GLIBC_TUNABLES are kept instead.
JOB_TUNABLES = "glibc.malloc.mmap_threshold=4194304:glibc.malloc.trim_threshold=8388608"


def _jail() -> tuple[str, ...]:
    """No network for the processes that decode uploaded images and PDFs: a decoder
    exploited by a crafted file reaches nothing, not even this host's 127.0.0.1."""
    jail = sandbox.network_jail()
    if not jail:
        log.warning("job processes run with this host's network: unshare --net is not allowed")
    return jail


class _Ended(errors.InvalidImage):
    """The job's process ended without answering: libvips crashed on the image."""


class _Process:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self._proc = proc

    @classmethod
    async def start(cls, argv: list[str]) -> _Process:
        env = {"GLIBC_TUNABLES": JOB_TUNABLES, **os.environ, "MALLOC_ARENA_MAX": "2"}
        proc = await sandbox.spawn(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=env
        )
        return cls(proc)

    async def render(self, job: Job) -> Rendered:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        try:
            self._proc.stdin.write(frame(job))
            await self._proc.stdin.drain()
            head = await self._proc.stdout.readexactly(LENGTH)
            reply = pickle.loads(await self._proc.stdout.readexactly(int.from_bytes(head, "big")))
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            code = await self._proc.wait()
            raise _Ended(f"the image cannot be processed: its job ended ({code})") from exc
        kind, value = reply
        if kind == "ok":
            assert isinstance(value, Rendered)
            return value
        assert isinstance(value, errors.StowageError | BigJob)
        raise value

    async def kill(self) -> None:
        if not await sandbox.reap(self._proc, _REAP_SECONDS):
            # SIGKILL was sent; a stop must not hang on its report
            log.warning(
                "job process %s: no exit reported %s s after SIGKILL", self._proc.pid, _REAP_SECONDS
            )
