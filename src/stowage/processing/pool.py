"""A bounded pool of transformation jobs, each run in a job process (``worker.py``).

At most ``jobs`` run at once and at most ``queue`` more wait in each lane (small jobs,
drawn ones, big ones: counted apart, ``lanes.py``); any request beyond is refused at once
with 503 and ``Retry-After`` (the lane's expected wait) rather than queued without bound,
and so is one that has waited ``wait_seconds`` for a slot. A job whose estimated cost (``cost.py``)
makes it a big one is run in at most ``jobs - small_slots`` slots at once, so that small
jobs always find a slot a big one cannot take. The estimate cannot see everything (how
long a PDF page or an SVG takes to draw, an encoder's worst case): a job estimated small
that is still running after ``small_seconds`` is stopped and run again as a big one, so
that a slot kept for small jobs is never held longer than that, and its source (``Job.origin``)
is remembered: its next jobs go to the big jobs' slots at once. So is the source of a
job the job process found big (``BigJob``) when finding so took it long (an SVG's parse
took a second); a raster is found big from its header in milliseconds, and only
that chain of it is remembered: its thumbnails still run in the small lane. A job whose
source is drawn (``lanes.drawn``: an SVG, a PDF), whose cost its
header cannot give, holds a small job's slot ``drawn_seconds`` at most, at most as many
of them as big jobs run at once, and they are admitted in a lane of their own, so that
the kept slots and their admissions never wait on a guess.
``wait_seconds`` bounds a request's whole wait, from its admission to the slot it runs
in, a small job's overrun included: a job run again as a big one gets what is left of
it, and 503 at once when nothing is left and no big job's slot is free. So does its
deadline: the run again gets what is left of ``seconds`` after the small run, so that no
request's job runs longer.

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
import collections
import contextlib
import dataclasses
import logging
import math
import os
import pickle
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from stowage import errors
from stowage.config import Settings
from stowage.config.processing import JOB_GRACE_SECONDS
from stowage.processing import admission, estimates, jobfiles, metrics, sandbox
from stowage.processing.base import BigJob, Job, Rendered
from stowage.processing.lanes import Lane, Lanes, drawn
from stowage.processing.worker import LENGTH, READY, frame

START_SECONDS = 60.0  # a job process's start, its imports (1-3 s on a loaded machine)
_REAP_SECONDS = 10.0  # after SIGKILL, for the process's exit to be reported
OVERRAN_KEPT = 1024  # sources (or a source's chains) remembered as big, per pool
#: Seconds a job process may take to find a job big (``BigJob.held``) before the job's
#: whole source is taken as big: a raster's header gives it in milliseconds, an SVG's
#: parse took 1 s.
ESTIMATE_HELD = 0.25
NO_LANES = Lanes()  # no time limit of a lane's own
log = logging.getLogger(__name__)


class JobPool:
    def __init__(
        self,
        jobs: int,
        queue: int,
        seconds: float,
        memory: int,
        work: Path,
        small_slots: int = 0,
        pillow_jpeg: bool = True,
        lanes: Lanes = NO_LANES,
    ) -> None:
        self.jobs = jobs if jobs > 0 else (os.cpu_count() or 1)
        big_slots = max(1, self.jobs - max(0, small_slots))
        # each lane's time limit: what a job is taken to run before one has finished
        small = min(seconds, lanes.small_seconds)
        drawn_limit = min(small, lanes.drawn_seconds)
        self._small = Lane("small", self.jobs, self.jobs + max(0, queue), small)
        self._bigs = Lane("big", big_slots, big_slots + max(0, queue), seconds)  # apart
        self._drawing = Lane("drawn", big_slots, big_slots + max(0, queue), drawn_limit)
        self._seconds = seconds
        self._lanes = lanes
        self._slots = asyncio.Semaphore(self.jobs)
        # Big jobs (base.BigJob) run in at most this many slots at once: the others are
        # kept for small jobs, which then never wait behind big ones.
        self._big = asyncio.Semaphore(big_slots)
        # So do jobs estimated small whose source is drawn (``drawn``): the kept slots are
        # never held by a job whose cost was a guess, longer than ``Lanes.drawn_seconds``.
        self._drawn = asyncio.Semaphore(big_slots)
        self.small_runs = 0  # jobs that took a slot in the small lane
        # libvips' threads per job: one each when the pool already runs a job per core.
        threads = max(1, (os.cpu_count() or 1) // self.jobs)
        self._work = work  # the job processes' folders, one each (jobfiles.py)
        jobfiles.sweep(work)
        self._checked = False  # whether bubblewrap can confine them (on the first start)
        worker = [sys.executable, "-m", "stowage.processing.worker"]
        self._argv = [*worker, str(threads), str(memory), "1" if pillow_jpeg else "0"]
        self._idle: list[_Process] = []
        self._all: set[_Process] = set()
        self._closed = False
        # Sources whose job overran a small job's time, the latest last (OVERRAN_KEPT).
        self._overran: collections.OrderedDict[str, None] = collections.OrderedDict()

    async def run(self, job: Job) -> Rendered:
        until = time.monotonic() + self._lanes.wait_seconds  # the whole wait, re-queue too
        if self._would_wait() and not admission.refuse_early(job, admission.FIRST_BYTES):
            # Its header first: a source past the pixel limit is refused (422) at once,
            # not after a wait or with a 503 (``admission.py``). A job that starts at once
            # is refused by its process as fast, without this read.
            await asyncio.to_thread(admission.refuse_early, job)
        spent = 0.0  # running as a small job: the deadline is the request's, not per run
        if not self._known_slow(job):
            lane = self._drawing if drawn(job.source) else self._small
            lane.admit(self.jobs)
            try:
                return await self._run_small(job, until, lane)
            except _Deferred as deferred:
                self._remember(_slow_key(job, deferred.whole))
                spent = deferred.spent
            finally:
                lane.leave()
        self._bigs.admit(self.jobs)  # 503 at once: the big lane's own count, not the small's
        try:
            metrics.BIG_JOBS.inc()
            seconds = self._seconds - spent  # what is left of the deadline
            limits = dataclasses.replace(job.limits, big_cost=math.inf, seconds=seconds)
            big = dataclasses.replace(job, limits=limits)
            lane = self._bigs
            async with self._slot(self._big, until, lane), self._slot(self._slots, until, lane):
                return await self._timed(lane, big, seconds)
        finally:
            self._bigs.leave()

    async def _run_small(self, job: Job, until: float, lane: Lane) -> Rendered:
        """The job in any slot, within the small lane's time (a drawn source's: shorter);
        ``_Deferred`` when it is a big one: estimated so in the job process, or still
        running past that time."""
        seconds = self._lanes.small_seconds
        async with contextlib.AsyncExitStack() as held:
            if lane is self._drawing:
                seconds = min(seconds, self._lanes.drawn_seconds)
                await held.enter_async_context(self._slot(self._drawn, until, lane))
            await held.enter_async_context(self._slot(self._slots, until, lane))
            self.small_runs += 1
            began = time.monotonic()
            try:
                return await self._timed(lane, job, seconds, small=True)
            except BigJob as found:
                # The whole source is remembered when finding that held the slot long: an
                # SVG's estimate took about 1 s (parsed and opened), on every request.
                slow = found.held >= ESTIMATE_HELD or lane is self._drawing
                raise _Deferred(0.0, whole=slow) from None
            except _Overran:
                raise _Deferred(time.monotonic() - began, whole=True) from None

    async def _timed(self, lane: Lane, job: Job, seconds: float, small: bool = False) -> Rendered:
        began = time.monotonic()
        try:
            return await self._render(job, seconds, small)
        finally:
            lane.ran(time.monotonic() - began)

    def _would_wait(self) -> bool:
        """Whether a new job may not start at once: a slot or a lane is taken."""
        if any(slots.locked() for slots in (self._slots, self._big, self._drawn)):
            return True
        return any(lane.admitted >= lane.slots for lane in (self._small, self._drawing, self._bigs))

    def _known_slow(self, job: Job) -> bool:
        for key in (_slow_key(job, True), _slow_key(job, False)):
            if key and key in self._overran:
                self._overran.move_to_end(key)
                return True
        return False

    def _remember(self, key: str) -> None:
        if key:
            self._overran[key] = None
            self._overran.move_to_end(key)
            while len(self._overran) > OVERRAN_KEPT:
                self._overran.popitem(last=False)

    @contextlib.asynccontextmanager
    async def _slot(
        self, slots: asyncio.Semaphore, until: float, lane: Lane
    ) -> AsyncIterator[None]:
        """One of ``slots``, waited for until ``until`` (``time.monotonic``; then 503, with
        ``lane``'s expected wait); at once or 503 when that has passed."""
        left = until - time.monotonic()
        if left <= 0 and slots.locked():
            raise lane.busy(self.jobs)
        try:
            async with asyncio.timeout(max(0.0, left) if math.isfinite(left) else None):
                await slots.acquire()  # a free slot is taken without a pause
        except TimeoutError:
            raise lane.busy(self.jobs) from None
        try:
            yield
        finally:
            slots.release()

    async def _render(self, job: Job, seconds: float, small: bool = False) -> Rendered:
        with jobfiles.opened(jobfiles.source_paths(job)) as fds:
            return await self._render_with(job, fds, seconds, small)

    async def _render_with(self, job: Job, fds: list[int], seconds: float, small: bool) -> Rendered:
        """The job in a process, stopped past ``seconds``: a small job's time (``_Overran``)
        or what is left of its deadline (422 PROCESSING_TIMEOUT)."""
        asked = time.monotonic()
        process = await self._ready()
        if not small:  # a process started for it took of what is left (0.3-1.2 s measured)
            seconds = max(0.0, seconds - (time.monotonic() - asked))
        overruns = small and seconds < self._seconds
        ready = time.monotonic()
        try:
            limit = seconds if overruns else min(seconds, self._seconds) + JOB_GRACE_SECONDS
            async with asyncio.timeout(limit):
                rendered = await process.render(job, fds)
        except _Ended:
            await self._stop(process)  # already gone: its folder and channel remain
            raise
        except errors.ProcessingTimeout as exc:  # the engine's own deadline, what was left
            self._idle.append(process)
            raise errors.ProcessingTimeout(seconds=self._seconds) from exc
        except (errors.StowageError, BigJob) as exc:
            self._idle.append(process)  # the job was refused or deferred; its process is fine
            if isinstance(exc, BigJob):
                exc.held = time.monotonic() - ready
            raise
        except BaseException as exc:  # past the deadline, or the server stopping
            await self._stop(process)
            if isinstance(exc, TimeoutError):
                if overruns:
                    raise _Overran() from exc
                raise errors.ProcessingTimeout(seconds=self._seconds) from exc
            raise
        self._idle.append(process)
        return rendered

    async def _ready(self) -> _Process:
        """An idle process whose folder is still there, else a new one. A folder removed
        from outside (a cleaner of temporary files; a node sharing the data folder sweeping
        what it takes for a crashed server's) cannot be given back to its process, which
        could no longer write a result: it is replaced before it gets a job."""
        while self._idle:
            process = self._idle.pop()
            if process.has_folder():
                return process
            await self._stop(process)
        return await self._start()

    async def _start(self) -> _Process:
        if self._closed:  # a job that got its slot after close(): no process outlives it
            raise errors.ShuttingDown()
        if not self._checked:  # once, on the first job: it starts a Python confined
            await asyncio.to_thread(_warn_if_open)
            self._checked = True
        process = await _Process.start(self._argv, self._work)
        self._all.add(process)  # killed by close() while it starts
        try:
            await process.started()
        except BaseException:
            self._all.discard(process)
            raise
        if self._closed:
            await self._stop(process)
            raise errors.ShuttingDown()
        return process

    async def _stop(self, process: _Process) -> None:
        self._all.discard(process)
        await process.kill()

    @property
    def busy(self) -> int:
        return sum(lane.admitted for lane in (self._small, self._drawing, self._bigs))

    async def close(self) -> None:
        self._closed = True
        self._idle.clear()
        for process in list(self._all):
            await self._stop(process)


def _warn_if_open() -> None:
    """Job processes decode uploaded images and PDFs: confined (``sandbox.job_jail``), a
    decoder exploited by a crafted file reads and reaches nothing beyond its job."""
    if sandbox.confining_works():
        return
    if sandbox.network_jail():
        log.warning("job processes are not confined to their folders: bwrap cannot run here")
    else:
        log.warning("job processes run with this host's network: unshare --net is not allowed")


class _Overran(Exception):
    """Not an answer: a job estimated small ran past ``Lanes.small_seconds``."""


class _Deferred(Exception):
    """Not an answer: the job is a big one, found so after ``spent`` seconds of its
    deadline in a small job's slot (none when it was estimated so); ``whole``: its
    source's other chains are taken as big too (it overran, or its estimate was slow)."""

    def __init__(self, spent: float, *, whole: bool) -> None:
        super().__init__(spent)
        self.spent, self.whole = spent, whole


def _slow_key(job: Job, whole: bool) -> str:
    """What a job found big is remembered by: its source (``whole``), or its source and
    chain; nothing ("") for a job without an origin."""
    if whole or not job.origin:
        return job.origin
    return f"{job.origin}/{job.chain.key()}"


class _Ended(errors.InvalidImage):
    """The job's process ended without answering: libvips crashed on the image."""


class _Process:
    def __init__(self, proc: asyncio.subprocess.Process, folder: Path, channel: socket.socket):
        self._proc = proc
        self._folder = folder  # its own, the only one it may write (jobfiles.py)
        self._channel = channel  # the sources' descriptors go this way

    @classmethod
    async def start(cls, argv: list[str], work: Path) -> _Process:
        work.mkdir(parents=True, exist_ok=True)  # removed while the server ran
        folder = Path(tempfile.mkdtemp(prefix=f"job-{os.getpid()}-", dir=work))
        (folder / jobfiles.HOME).mkdir()
        ours, theirs = socket.socketpair()
        try:
            jail = sandbox.job_jail(folder)
            confined = "1" if jail[:1] == ("bwrap",) else "0"
            proc = await sandbox.spawn(
                *jail,
                *argv,
                str(theirs.fileno()),
                confined,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                env=_environment(folder),
                cwd=folder,
                pass_fds=(theirs.fileno(),),
            )
        except BaseException:
            ours.close()
            shutil.rmtree(folder, ignore_errors=True)
            raise
        finally:
            theirs.close()
        ours.setblocking(False)  # a job's few bytes never fill it
        return cls(proc, folder, ours)

    async def started(self) -> None:
        """Waits for the process's first frame: Python's start and the engines' imports
        took 1-3 s of a loaded machine, which counted in its first job's time, and a PDF
        or SVG job (1 s in a small slot) ran again as a big one for it."""
        try:
            async with asyncio.timeout(START_SECONDS):
                said = await self._frame()
        except (asyncio.IncompleteReadError, ConnectionError, TimeoutError) as exc:
            await self.kill()  # ended (or killed: a crash, the pool closed) before its job
            code = self._proc.returncode
            raise _Ended(f"the image cannot be processed: its job ended ({code})") from exc
        if said != READY:
            await self.kill()
            raise _Ended(f"the job process said {said!r} before any job")

    def has_folder(self) -> bool:
        return self._folder.is_dir()

    async def render(self, job: Job, fds: list[int]) -> Rendered:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        here = jobfiles.in_folder(job, self._folder)
        try:
            jobfiles.send(self._channel, fds)
            self._proc.stdin.write(frame(here))
            await self._proc.stdin.drain()
            reply = await self._frame()
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            code = await self._proc.wait()
            raise _Ended(f"the image cannot be processed: its job ended ({code})") from exc
        try:
            kind, value, *spent = reply
            if kind == "ok":
                assert isinstance(value, Rendered)
                jobfiles.deliver(here.dest, job.dest)
                estimates.observe(spent[0])
                return value
            assert isinstance(value, errors.StowageError | BigJob)
            raise value
        finally:
            jobfiles.empty(self._folder)

    async def _frame(self) -> Any:  # what the process pickled
        assert self._proc.stdout is not None
        head = await self._proc.stdout.readexactly(LENGTH)
        return pickle.loads(await self._proc.stdout.readexactly(int.from_bytes(head, "big")))

    async def kill(self) -> None:
        self._channel.close()
        if not await sandbox.reap(self._proc, _REAP_SECONDS):
            # SIGKILL was sent; a stop must not hang on its report
            log.warning(
                "job process %s: no exit reported %s s after SIGKILL", self._proc.pid, _REAP_SECONDS
            )
        shutil.rmtree(self._folder, ignore_errors=True)


def _environment(folder: Path) -> dict[str, str]:
    """The sandbox's job environment, with glibc's settings for a job process's heap."""
    return sandbox.job_environment(folder, sandbox.job_heap())


def pool_of(settings: Settings) -> JobPool:
    """The job pool the settings describe."""
    return JobPool(
        settings.processing_jobs,
        settings.processing_queue,
        settings.processing_job_seconds,
        settings.processing_job_memory,
        settings.data_dir / "tmp" / "jobs",
        settings.processing_small_job_slots,
        settings.processing_pillow_jpeg,
        Lanes(
            settings.processing_small_job_seconds,
            settings.processing_wait_seconds,
            settings.processing_small_drawing_seconds,
        ),
    )
