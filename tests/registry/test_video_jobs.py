"""The video conversion queue (``registry/queues.py`` ``VideoJobs``) on both backends:
one job per key whatever its state, asked concurrently or twice; claimed with a lease;
completed, failed or retried; forgotten with its source."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from stowage.registry.base import VideoJob
from stowage.registry.postgres import PostgresRegistry
from stowage.registry.sqlite import SQLiteRegistry
from tests.servers.fx_postgres import PostgresServer


@pytest.fixture(params=["sqlite", "postgres"])
async def registry(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    if request.param == "sqlite":
        found: Any = SQLiteRegistry(tmp_path / "r.db")
    else:
        server: PostgresServer = request.getfixturevalue("postgres_server")
        found = PostgresRegistry(server.new_database())
        await found.upgrade()
    await found.open()
    yield found
    await found.close()


def job(key: str, handle: str = "H1", uuid: str = "u") -> VideoJob:
    return VideoJob(0, key, f"{uuid}-{key}", handle, "KEY", 1, "video_convert=preset:h264")


async def test_one_job_per_key_whatever_its_state(registry: Any) -> None:
    first = await registry.ask_video(job("k1", uuid="a"))
    again = await registry.ask_video(job("k1", uuid="b"))
    assert first.id and again.id == first.id and again.uuid == "a-k1"
    [claimed] = await registry.claim_videos("w", now=first.created + 1, lease=60, limit=5)
    assert claimed.status == "started" and claimed.attempts == 1
    assert await registry.finish_video(claimed.id, "w", now=claimed.created + 2, result="{}")
    done = await registry.ask_video(job("k1", uuid="c"))
    assert (done.id, done.status, done.result) == (first.id, "completed", "{}")
    assert await registry.claim_videos("w", now=first.created + 100, lease=60, limit=5) == []


async def test_concurrent_asks_make_one_job(registry: Any) -> None:
    asked = await asyncio.gather(*(registry.ask_video(job("same", uuid=str(n))) for n in range(8)))
    assert len({j.id for j in asked}) == 1 and len({j.uuid for j in asked}) == 1


async def test_failed_and_retried_and_taken_over(registry: Any) -> None:
    a = await registry.ask_video(job("a"))
    now = a.created + 1
    [held] = await registry.claim_videos("dead-node", now=now, lease=10, limit=1)
    [taken] = await registry.claim_videos("live-node", now=now + 11, lease=10, limit=1)
    assert taken.id == held.id and taken.attempts == 2
    assert not await registry.finish_video(held.id, "dead-node", now=now + 12, result="{}")
    assert await registry.finish_video(
        taken.id, "live-node", now=now + 12, error="x", retry_at=now + 20
    )
    assert await registry.claim_videos("w", now=now + 19, lease=10, limit=1) == []
    [again] = await registry.claim_videos("w", now=now + 20, lease=10, limit=1)
    assert again.last_error == "x"
    assert await registry.finish_video(again.id, "w", now=now + 21, error="not a video")
    failed = await registry.video_job("a")
    assert (failed.status, failed.last_error) == ("failed", "not a video")


async def test_forget_drops_every_job_of_a_handle(registry: Any) -> None:
    await registry.ask_video(job("a", handle="H1"))
    await registry.ask_video(job("b", handle="H1"))
    await registry.ask_video(job("c", handle="H2"))
    gone = await registry.forget_videos("H1")
    assert sorted(j.key for j in gone) == ["a", "b"]
    assert await registry.video_job("a") is None and await registry.video_job("c") is not None
    assert await registry.forget_videos("H1") == []


async def test_a_running_job_renews_its_lease(registry: Any) -> None:
    a = await registry.ask_video(job("a"))
    now = a.created + 1
    [held] = await registry.claim_videos("node-a", now=now, lease=10, limit=1)
    assert await registry.renew_video(held.id, "node-a", now=now + 8, lease=10)
    assert await registry.claim_videos("node-b", now=now + 15, lease=10, limit=1) == []
    [taken] = await registry.claim_videos("node-b", now=now + 18, lease=10, limit=1)
    assert taken.id == held.id and taken.attempts == 2
    assert not await registry.renew_video(held.id, "node-a", now=now + 19, lease=10)


async def test_an_ended_job_is_rerun_once_when_two_nodes_force_it(registry: Any) -> None:
    first = await registry.ask_video(job("k", uuid="a"))
    # A job that has not ended is never replaced.
    assert (await registry.rerun_video(first, job("k", uuid="x"))).uuid == "a-k"
    [claimed] = await registry.claim_videos("w", now=first.created + 1, lease=60, limit=1)
    assert await registry.finish_video(claimed.id, "w", now=first.created + 2, result="{}")
    ended = await registry.video_job("k")
    reruns = await asyncio.gather(
        registry.rerun_video(ended, job("k", uuid="b")),
        registry.rerun_video(ended, job("k", uuid="c")),
    )
    assert len({r.id for r in reruns}) == 1 and reruns[0].id != first.id
    assert reruns[0].status == "pending" and reruns[0].result is None
    assert (await registry.video_job("k")).uuid == reruns[0].uuid


async def test_progress_is_written_only_by_the_holder(registry: Any) -> None:
    first = await registry.ask_video(job("p"))
    assert first.progress is None
    [held] = await registry.claim_videos("w", now=first.created + 1, lease=60, limit=1)
    assert await registry.video_progress(held.id, "w", 42.5)
    assert not await registry.video_progress(held.id, "other", 60.0)
    assert (await registry.video_job("p")).progress == 42.5
    assert await registry.finish_video(held.id, "w", now=first.created + 2, result="{}")
    assert not await registry.video_progress(held.id, "w", 70.0)  # ended: not running
