"""Video and audio conversions as jobs on any node (``video_convert``, ``av_convert``).

The first request for a conversion URL queues a job in the registry (``VideoJobRows``:
one per source version and normalised task, whichever node is asked) and answers at
once with the hosted shape; the same URL then answers the job's status. A worker on
every node claims jobs with a short lease it renews while the job runs (``heartbeat.py``:
a node that is killed stops renewing, and another node takes the job about a lease
later), reads the source into a job folder, probes it (``prober.py``), runs
ffmpeg (``ffmpeg.py``) and stores the result as a new file of the app through the
ordinary store path. A file ffmpeg refuses fails the job at once with the reason; other
failures (storage, a killed node) are retried up to ``video_attempts``. As a change
sink, an overwrite or delete of the source drops its jobs and their stored results.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import secrets
import shutil
import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from stowage import errors
from stowage.config import Settings
from stowage.core import events
from stowage.core.events import Change
from stowage.core.fetch import Fetcher
from stowage.core.providers import Providers
from stowage.core.security import Credentials, authorize, file_target, record_for
from stowage.core.uploads import Store
from stowage.core.wake import Wake
from stowage.processing import (
    catalogue,
    ffmpeg,
    grammar,
    metrics,
    video,
    videoresults,
    videorun,
    videothumbs,
)
from stowage.processing import chain as chains
from stowage.processing.base import Task
from stowage.processing.ffmpeg import Limits, MediaRefused
from stowage.processing.heartbeat import LeaseLost, while_held
from stowage.processing.prober import Prober
from stowage.processing.videoinputs import Inputs
from stowage.processing.videoresults import Results, UrlOf, app_creds, result_handles
from stowage.registry.base import (
    VIDEO_COMPLETED,
    VIDEO_FAILED,
    VIDEO_STARTED,
    App,
    FileRecord,
    FileRows,
    VideoJob,
    VideoJobRows,
)

log = logging.getLogger("stowage.video")
#: Removes a stored result: (handle, api_key, creds).
Remove = Callable[[str, str, Credentials], Awaitable[Any]]
#: Sends an app's webhooks an event: (app, action, handle, text); never raises.
Announce = Callable[[App, str, str, dict[str, Any]], Awaitable[None]]
CONVERSION_EVENT = "fp.converse"  # the hosted service's conversion event


def is_video(segments: list[str]) -> bool:
    """Whether a path's tasks ask for a conversion (``video_convert`` or ``av_convert``):
    by the task's name alone, so that an image chain pays no second parse."""
    return any(_named(s) is video.TASKS[0] for s in segments)


def _named(segment: str) -> object:
    return catalogue.spec(segment.partition("=")[0])


class VideoJobs:
    def __init__(
        self,
        settings: Settings,
        rows: VideoJobRows,
        files: FileRows,
        providers: Providers,
        store: Store,
        remove: Remove,
        url_of: UrlOf,
        announce: Announce,
        fetcher: Fetcher | None = None,
    ) -> None:
        self.settings, self.rows, self.files, self.providers = settings, rows, files, providers
        self.inputs = Inputs(files, providers, fetcher)
        self.store, self.remove, self.url_of, self.announce = store, remove, url_of, announce
        self.limits = Limits.of(settings)
        self.folder = settings.data_dir / "tmp" / "video"
        self.prober = Prober(self.folder)
        self.name = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self.lease = settings.video_lease_seconds  # renewed every third while a job runs
        # The longest a job may take (reading, a watermark URL's wait for a fetch slot,
        # probing, ffmpeg, storing): a job folder older than that is no live job's,
        # whichever process of the node made it.
        waits = settings.fetch_background_slot_wait
        self.longest = 2 * settings.video_job_seconds + 120 + waits
        self.poll = 0.25  # another process or node claims a new job within this
        self._wake = Wake()
        self._tasks: set[asyncio.Task[None]] = set()
        self._runner: asyncio.Task[None] | None = None

    # -- the request -------------------------------------------------------------------
    async def ask(
        self, handle: str, segments: list[str], creds: Credentials, api_key: str | None
    ) -> dict[str, Any]:
        """The conversion's status in the hosted shape, the job queued if it is new."""
        task = _the_task(segments)
        plan = video.plan(task)  # every option checked before a job exists
        record = await record_for(self.files, self.providers.apps, handle, api_key)
        app = await self.providers.app(record.api_key)
        skew, now = self.settings.policy_clock_skew, time.time()
        target = file_target(record)
        authorize(app.secret, creds, "convert", target, required=app.security, now=now, skew=skew)
        await self.inputs.check(plan, record.api_key)
        forced, task = task.get("force") is True, unforced(task)
        key = job_key(record, task)
        job = await self.rows.video_job(key)
        new = VideoJob(0, key, uuid.uuid4().hex, handle, record.api_key, record.version, task.key())
        if job is None:
            job = await self.rows.ask_video(new)
            self._wake.set()
        elif (
            forced
            and job.status in (VIDEO_COMPLETED, VIDEO_FAILED)
            and now > job.updated + RERUN_AFTER
        ):
            ended, job = job, await self.rows.rerun_video(job, new)
            self._wake.set()
            if job.uuid == new.uuid and ended.result:  # ours replaced it: its result goes
                await self._remove(result_handles(json.loads(ended.result)), ended.api_key)
        return answer(job)

    # -- the worker ----------------------------------------------------------------------
    def start(self) -> None:
        if self.settings.video_jobs > 0 and self._runner is None:
            _sweep(self.folder, time.time() - self.longest)
            self._runner = asyncio.get_running_loop().create_task(self._run())

    async def close(self) -> None:
        tasks = [t for t in (self._runner, *self._tasks) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._runner = None
        await self.prober.close()

    async def _run(self) -> None:
        while True:
            try:
                await self.round()
            except Exception:
                log.exception("video worker round failed")
            await self._wake.wait(self.poll)

    async def round(self) -> int:
        """Claims as many due jobs as this node has free slots and starts them."""
        free = self.settings.video_jobs - len(self._tasks)
        if free <= 0:
            return 0
        claimed = await self.rows.claim_videos(self.name, time.time(), self.lease, free)
        for job in claimed:
            task = asyncio.get_running_loop().create_task(self.run_job(job))
            self._tasks.add(task)
            task.add_done_callback(self._done)
        return len(claimed)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._wake.set()  # a slot is free

    async def run_job(self, job: VideoJob) -> None:
        folder, started = self.folder / job.uuid, time.monotonic()
        try:
            result = await while_held(
                self._convert(job, folder), self._renewal(job), self.lease / 3
            )
        except asyncio.CancelledError:  # the node stops: the job is due again at once
            now = time.time()
            await self.rows.finish_video(
                job.id, self.name, now=now, error="its node stopped", retry_at=now
            )
            metrics.VIDEO_JOBS.inc(outcome="returned")
            raise
        except LeaseLost:  # another node runs it now, or the source changed: not ours
            log.warning("video job %s: no longer this node's (taken over or dropped)", job.uuid)
            metrics.VIDEO_JOBS.inc(outcome="lost")
        except MediaRefused as exc:
            await self._fail(job, str(exc), final=True)
        except errors.StowageError as exc:
            await self._fail(job, exc.message, final=exc.status < 500)
        except Exception as exc:
            log.exception("video job %s failed", job.uuid)
            await self._fail(job, f"{type(exc).__name__}: {exc}", final=False)
        else:
            text = json.dumps(result, separators=(",", ":"))
            if await self.rows.finish_video(job.id, self.name, now=time.time(), result=text):
                metrics.VIDEO_JOBS.inc(outcome="completed")
                await self._announce(job, status=VIDEO_COMPLETED, result=text)
            else:  # the source changed meanwhile (the job was dropped) or the lease was lost
                await self._remove(result_handles(result), job.api_key)
        finally:
            metrics.VIDEO_SECONDS.observe(time.monotonic() - started)
            shutil.rmtree(folder, ignore_errors=True)

    def _renewal(self, job: VideoJob) -> Callable[[], Awaitable[bool]]:
        async def renew() -> bool:
            return await self.rows.renew_video(job.id, self.name, now=time.time(), lease=self.lease)

        return renew

    async def _fail(self, job: VideoJob, reason: str, *, final: bool) -> None:
        log.info("video job %s failed (%s): %s", job.uuid, "final" if final else "retry", reason)
        retry_at = None
        if not final and job.attempts < self.settings.video_attempts:
            retry_at = time.time() + min(5.0 * 2 ** (job.attempts - 1), 300.0)
        await self.rows.finish_video(
            job.id, self.name, now=time.time(), error=reason[:1000], retry_at=retry_at
        )
        metrics.VIDEO_JOBS.inc(outcome="failed" if retry_at is None else "retry")
        if retry_at is None:
            await self._announce(job, status=VIDEO_FAILED, error=reason[:1000])

    async def _announce(
        self, job: VideoJob, *, status: str, result: str | None = None, error: str = ""
    ) -> None:
        """``fp.converse`` to the app's webhooks: the conversion's address and its status
        answer (as the URL gives it)."""
        ended = dataclasses.replace(job, status=status, result=result, last_error=error)
        text = {"url": f"/{job.chain}/{job.handle}", **answer(ended)}
        if result:
            made = json.loads(result)
            text["link"] = {"url": made["url"], "handle": made["handle"], **made["result"]}
        try:
            app = await self.providers.app(job.api_key)
        except errors.StowageError:
            return  # the app is gone: nobody to tell
        await self.announce(app, CONVERSION_EVENT, job.handle, text)

    async def _convert(self, job: VideoJob, folder: Path) -> dict[str, Any]:
        record = await self.files.get(job.handle)
        if record is None or record.version != job.version:
            raise MediaRefused("the source was changed or deleted")
        task = grammar.parse_task(job.chain)
        plan = video.plan(task)
        app = await self.providers.app(record.api_key)
        folder.mkdir(parents=True, exist_ok=True)
        source, dest = folder / "input", folder / f"output.{plan.extension}"
        await self.inputs.source(app, record, source, self.settings.video_max_input_bytes)
        likely = videothumbs.of(plan, task, None, folder).args
        held = await videorun.hold(source, dest, plan, self.limits, likely)
        try:
            media = await ffmpeg.probe(source, self.limits, self.prober)
            videorun.fits(media, plan)
            mark = folder / "watermark" if plan.watermark is not None else None
            if mark is not None:
                await self.inputs.watermark(app, plan, mark, self.limits, self.prober)
            seconds = 0.0 if plan.preset.still else videorun.seconds_made(media, plan)
            told = videorun.progress_writer(self.rows, job, self.name)
            taking = videothumbs.of(plan, task, seconds, folder)
            await videorun.convert(
                source,
                dest,
                plan,
                self.limits,
                mark,
                progress=told,
                seconds=seconds,
                extra=taking.args,
                held=held,
            )
        finally:
            if held is not None:
                await held.drop()  # the probe refused the source, or the job was stopped
        if plan.preset.muxer == "hls":
            videoresults.segments_of(dest)  # before the probe follows the playlist
        stills = await taking.collect(dest, self.limits)
        results = Results(self.store, self.url_of, self._remove)
        if plan.preset.still:  # its type is the plan's, its size in its header
            width, height = videoresults.still_size(dest)
            stored = await results.save(app, record, task, plan, dest)
            metadata: dict[str, Any] = {
                "mime_type": plan.mimetype,
                "extname": f".{plan.extension}",
                "width": width,
                "height": height,
            }
        else:
            made, stored = await self._probe_and_save(
                results, (app, record, task, plan), dest, stills
            )
            metadata = made.summary(plan.mimetype, plan.extension)
        metadata["file_size"] = stored.size
        found = {
            "handle": stored.record.handle,
            "url": self.url_of(stored.record),
            "result": metadata,
            "source": media.summary(record.mimetype, record.filename.rsplit(".", 1)[-1]),
        }
        found |= {"thumbs": videoresults.thumbs(stored, self.url_of)} if stored.stills else {}
        return found | ({"segments": list(stored.segments)} if stored.segments else {})

    async def _probe_and_save(
        self,
        results: Results,
        job: tuple[App, FileRecord, Task, video.Plan],
        dest: Path,
        stills: tuple[tuple[str, Path], ...],
    ) -> tuple[ffmpeg.Media, videoresults.Stored]:
        """The result's probe and its storing at once (neither waits on the other); a
        result the probe refuses is removed again."""
        probing = asyncio.ensure_future(ffmpeg.probe(dest, self.limits, self.prober, result=True))
        try:
            stored = await results.save(*job, dest, stills)
        except BaseException:
            probing.cancel()
            await asyncio.gather(probing, return_exceptions=True)
            raise
        try:
            return await probing, stored
        except BaseException:
            await asyncio.shield(self._remove(stored.handles, job[0].api_key))
            raise

    # -- the change sink -----------------------------------------------------------------
    async def publish(self, change: Change) -> None:
        """An overwrite or delete of a source drops its jobs and their results (in the
        background: a sink never waits)."""
        if change.action not in (events.OVERWRITE, events.DELETE) or change.record is None:
            return
        task = asyncio.get_running_loop().create_task(self._forget(change.record.handle))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _forget(self, handle: str) -> None:
        try:
            for job in await self.rows.forget_videos(handle):
                made = json.loads(job.result) if job.result else {}
                await self._remove(result_handles(made), job.api_key)
        except Exception:
            log.exception("dropping the video jobs of %s failed", handle)

    async def _remove(self, handles: list[str], api_key: str) -> None:
        """Removes stored results (a playlist and its segments), as any file is removed:
        their edge copies are purged."""
        if not handles:
            return
        try:
            app = await self.providers.app(api_key)
        except errors.StowageError as exc:
            log.warning("video results %s not removed: %s", handles, exc.message)
            return
        for handle in handles:
            try:
                await self.remove(handle, api_key, app_creds(app))
            except errors.StowageError as exc:
                log.warning("video result %s not removed: %s", handle, exc.message)


def answer(job: VideoJob) -> dict[str, Any]:
    """The hosted service's status answer: ``uuid``, ``status`` (pending, started,
    completed, failed) and ``timestamp``; once completed ``data.url`` (the result) and
    ``metadata`` (``result`` and ``source``); once failed ``message`` (why)."""
    found: dict[str, Any] = {
        "uuid": job.uuid,
        "status": job.status,
        "timestamp": str(int(job.created)),
    }
    if job.status == VIDEO_COMPLETED and job.result:
        made = json.loads(job.result)
        found["message"] = "Done"
        found["data"] = {"url": made["url"], **videoresults.thumb_urls(made)}
        found["metadata"] = {"result": made["result"], "source": made["source"]}
    elif job.status == VIDEO_FAILED:
        found["message"] = job.last_error or "the conversion failed"
    elif job.status == VIDEO_STARTED and job.progress is not None:
        found["data"] = {"progress": min(99, int(job.progress))}  # percent of the attempt
    return found


#: ``force:true`` re-runs a job that ended more than this many seconds ago; sooner, the
#: ended job answers, so that a client that polled the URL until ``completed`` and reads
#: it once more (filestack-python's ``to_filelink``) finds the job it waited for.
RERUN_AFTER = 30.0


def unforced(task: Task) -> Task:
    """The task without ``force``: a forced URL is the same conversion (one job key)."""
    return Task(task.name, tuple((k, v) for k, v in task.options if k != "force"))


def job_key(record: FileRecord, task: Task) -> str:
    """One job per source version (and content) and normalised task."""
    text = f"{record.handle}\n{record.version}\n{record.sha256}\n{task.key()}"
    return hashlib.sha256(text.encode()).hexdigest()


def _the_task(segments: list[str]) -> Task:
    """The one ``video_convert`` task of a path: with nothing else but request tasks."""
    chain = chains.parse(segments)
    tasks = [grammar.parse_task(s) for s in segments]
    found = [t for t in tasks if t.name == video.NAME]
    if len(found) != 1 or chain.tasks or chain.store is not None:
        raise errors.InvalidParameter(
            "video_convert is the only task of its URL (with security and cache)",
            parameter=video.NAME,
        )
    return found[0]


def _sweep(folder: Path, before: float) -> None:
    """Job folders a stopped process left. Only those older than any live lease: the
    ``--workers`` processes of a node share the folder."""
    for path in folder.iterdir() if folder.is_dir() else []:
        with contextlib.suppress(OSError):
            if path.stat().st_mtime < before:
                shutil.rmtree(path, ignore_errors=True)
