"""The declared queues, and the registry concerns built on them.

Each is a ``LeaseQueue`` (``queue.py``); this module says what is particular to each:
webhook deliveries stay as a log once finished and show their states as ``delivering``
and ``delivered``; an edge purge is deleted once acknowledged, and a purge already
waiting for the same cache and tag makes a new one redundant; a video conversion stays
to answer its status, and one exists per source version and chain, asked on any node.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from stowage.registry.base import (
    VIDEO_COMPLETED,
    VIDEO_FAILED,
    VIDEO_STARTED,
    WEBHOOK_DELIVERED,
    WEBHOOK_DELIVERING,
    WEBHOOK_FAILED,
    WEBHOOK_PENDING,
    EdgePurge,
    VideoJob,
    WebhookDelivery,
)
from stowage.registry.queue import LeaseQueue, QueueSpec

WEBHOOKS = QueueSpec(
    table="webhook_deliveries",
    job=WebhookDelivery,
    payload=("event_id", "api_key", "url", "action", "handle", "body"),
    outcome=("response_code",),
    keep_finished=True,
    leased=WEBHOOK_DELIVERING,
    done=WEBHOOK_DELIVERED,
    indexes={"webhook_due": ("status", "next_attempt"), "webhook_by_app": ("api_key", "id")},
)

PURGES = QueueSpec(
    table="edge_purges",
    job=EdgePurge,
    payload=("cache", "tag"),
    one_waiting_per=("cache", "tag"),
    indexes={
        "edge_purges_due": ("next_attempt",),
        "edge_purges_by_tag": ("cache", "tag"),
        "edge_purges_waiting": ("status", "next_attempt"),
    },
)

#: Lists deliveries newest first, of one app or all: (api_key, limit) -> deliveries.
WebhookLog = Callable[[str | None, int], Awaitable[list[WebhookDelivery]]]


class WebhookDeliveries:
    """``WebhookRows`` on a queue of ``WEBHOOKS`` and a backend's log query."""

    def __init__(self, queue: LeaseQueue[WebhookDelivery], log: WebhookLog) -> None:
        self.queue = queue
        self._log = log

    async def enqueue_webhooks(self, deliveries: list[WebhookDelivery]) -> list[WebhookDelivery]:
        return await self.queue.put(deliveries)

    async def claim_webhooks(
        self, worker: str, now: float, lease: float, limit: int
    ) -> list[WebhookDelivery]:
        return await self.queue.claim(worker, now, lease, limit)

    async def finish_webhook(
        self,
        delivery_id: int,
        worker: str,
        status: str,
        *,
        now: float,
        next_attempt: float = 0.0,
        response_code: int | None = None,
        error: str = "",
    ) -> bool:
        q, outcome = self.queue, {"response_code": response_code}
        if status == WEBHOOK_DELIVERED:
            return await q.complete(delivery_id, worker, now, error=error, **outcome)
        if status == WEBHOOK_FAILED:
            return await q.give_up(delivery_id, worker, now, error=error, **outcome)
        if status == WEBHOOK_PENDING:
            return await q.retry(delivery_id, worker, now, next_attempt, error=error, **outcome)
        raise ValueError(f"not a final or retry state: {status}")

    async def webhook_log(
        self, api_key: str | None = None, limit: int = 50
    ) -> list[WebhookDelivery]:
        return await self._log(api_key, limit)

    async def prune_webhooks(self, before: float) -> int:
        return await self.queue.prune(before)

    async def webhook_queue_depth(self) -> int:
        return await self.queue.depth()


class EdgePurges:
    """``PurgeQueue`` on a queue of ``PURGES``."""

    def __init__(self, queue: LeaseQueue[EdgePurge]) -> None:
        self.queue = queue

    async def enqueue_purges(self, purges: list[EdgePurge]) -> None:
        await self.queue.put(purges)

    async def claim_purges(
        self, worker: str, now: float, lease: float, limit: int
    ) -> list[EdgePurge]:
        return await self.queue.claim(worker, now, lease, limit)

    async def finish_purge(
        self, purge_id: int, worker: str, *, done: bool, next_attempt: float, error: str = ""
    ) -> bool:
        now = time.time()
        if done:
            return await self.queue.complete(purge_id, worker, now)
        return await self.queue.retry(purge_id, worker, now, next_attempt, error=error)

    async def purge_queue_depth(self) -> int:
        return await self.queue.depth()


VIDEO_JOBS = QueueSpec(
    table="video_jobs",
    job=VideoJob,
    payload=("key", "uuid", "handle", "api_key", "version", "chain"),
    outcome=("result", "progress"),
    keep_finished=True,  # the URL answers the finished job's status
    one_per=("key",),
    leased=VIDEO_STARTED,
    done=VIDEO_COMPLETED,
    indexes={"video_jobs_due": ("status", "next_attempt"), "video_jobs_by_handle": ("handle",)},
)


class VideoJobs:
    """The video conversion queue (``VideoJobRows``) on a queue of ``VIDEO_JOBS``."""

    def __init__(self, queue: LeaseQueue[VideoJob]) -> None:
        self.queue = queue

    async def ask_video(self, job: VideoJob) -> VideoJob:
        """The job of ``job.key``: ``job`` queued, or the one already asked (by any node)."""
        await self.queue.put([job])
        [found] = await self.queue.select("key = {p}", (job.key,))
        return found

    async def video_job(self, key: str) -> VideoJob | None:
        found = await self.queue.select("key = {p}", (key,))
        return found[0] if found else None

    async def claim_videos(
        self, worker: str, now: float, lease: float, limit: int
    ) -> list[VideoJob]:
        return await self.queue.claim(worker, now, lease, limit)

    async def renew_video(self, job_id: int, worker: str, *, now: float, lease: float) -> bool:
        """The running job's heartbeat: False once the job is no longer this worker's."""
        return await self.queue.renew(job_id, worker, now, lease)

    async def finish_video(
        self,
        job_id: int,
        worker: str,
        *,
        now: float,
        result: str = "",
        error: str = "",
        retry_at: float | None = None,
    ) -> bool:
        """Completed with ``result``, failed with ``error``, or due again at ``retry_at``."""
        q = self.queue
        if retry_at is not None:
            return await q.retry(job_id, worker, now, retry_at, error=error)
        if error:
            return await q.give_up(job_id, worker, now, error=error)
        return await q.complete(job_id, worker, now, result=result)

    async def video_progress(self, job_id: int, worker: str, percent: float) -> bool:
        return await self.queue.note(job_id, worker, progress=percent)

    async def rerun_video(self, ended: VideoJob, job: VideoJob) -> VideoJob:
        ended_states = (VIDEO_COMPLETED, VIDEO_FAILED)
        where = "id = {p} AND status IN ({p}, {p})"
        await self.queue.delete(where, (ended.id, *ended_states))
        return await self.ask_video(job)

    async def forget_videos(self, handle: str) -> list[VideoJob]:
        """Deletes the jobs of a source (overwritten or deleted); the jobs deleted."""
        gone = await self.queue.select("handle = {p}", (handle,))
        if gone:
            await self.queue.delete("handle = {p}", (handle,))
        return gone
