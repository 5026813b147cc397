"""The one change path (core/events.py): every committed change of a file or an app goes
through the write's purge step, then to every sink; neither step can fail the write."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stowage.config import Settings
from stowage.core import events
from stowage.core.events import Change
from stowage.edge import app_tag, stale_tags
from stowage.edge.purger import EdgePurger
from stowage.registry.base import App, FileRecord
from stowage.registry.sqlite import SQLiteRegistry
from tests.api.harness import Harness, harness, settings
from tests.api.test_file_ops import basic

__all__ = ["harness", "settings"]


class Recorder:
    """A sink and a purger at once: what it heard, in order, and what was committed then."""

    def __init__(self, harness: Harness) -> None:
        self.harness = harness
        self.heard: list[tuple[str, Change]] = []
        self.committed: list[bool] = []  # the registry change was visible at the purge step

    async def purge(self, change: Change) -> None:
        if change.record is not None:
            row = await self.harness.service.registry.get(change.record.handle)
            self.committed.append(
                row == (None if change.action == events.DELETE else change.record)
            )
        self.heard.append(("purge", change))

    async def publish(self, change: Change) -> None:
        self.heard.append(("publish", change))


class Failing:
    async def purge(self, change: Change) -> None:
        raise RuntimeError("a cache target that broke")

    async def publish(self, change: Change) -> None:
        raise RuntimeError("a sink that broke")


async def test_every_change_is_purged_then_published(harness: Harness) -> None:
    recorder = Recorder(harness)
    harness.parts.changes.purger = recorder
    harness.parts.changes.add(recorder)
    stored = await harness.store(b"one")
    handle = stored["handle"]
    auth = basic("app", harness.open_app.secret)
    resp = await harness.api.post(f"/api/file/{handle}", data=b"two", headers=auth)
    assert resp.status == 200
    resp = await harness.api.delete(f"/api/file/{handle}", headers=auth)
    assert resp.status == 200
    app = App(api_key="changedapp0000000001", secret="s")
    await harness.parts.apps.create(app)
    await harness.parts.apps.update(dataclasses.replace(app, security=True))
    await harness.parts.apps.delete(app.api_key)
    actions = [events.STORE, events.OVERWRITE, events.DELETE]
    actions += [events.APP_CREATE, events.APP_UPDATE, events.APP_DELETE]
    assert [(step, c.action) for step, c in recorder.heard] == [
        (step, action) for action in actions for step in ("purge", "publish")
    ]
    store, overwrite, delete = (c for step, c in recorder.heard[:6:2])
    assert overwrite.previous == store.record and overwrite.record is not None
    assert overwrite.record.size == 3 and delete.record == overwrite.record
    assert recorder.heard[8][1].previous_app == app  # the update carries the app before it
    assert recorder.committed == [True, True, True]


async def test_a_failing_purge_or_sink_fails_no_write(harness: Harness) -> None:
    recorder = Recorder(harness)
    harness.parts.changes.purger = Failing()
    harness.parts.changes.sinks[:0] = [Failing()]
    harness.parts.changes.add(recorder)
    stored = await harness.store(b"kept")
    resp = await harness.api.get(f"/api/file/{stored['handle']}")
    assert await resp.read() == b"kept"
    assert [c.action for _, c in recorder.heard] == [events.STORE]  # later sinks still hear


class Hanging:
    """A cache target that never answers."""

    name = "http://127.0.0.1:9/"

    def __init__(self) -> None:
        self.asked: list[Sequence[str]] = []

    async def purge(self, tags: Sequence[str], timeout: float) -> str | None:
        self.asked.append(tags)
        await asyncio.sleep(timeout)
        return f"no answer within {timeout:g} s"

    def warm(self) -> None:
        return None

    async def close(self) -> None:
        return None


@contextlib.asynccontextmanager
async def overwrite_purged(
    settings: Settings, target: Hanging
) -> AsyncIterator[tuple[EdgePurger, SQLiteRegistry, Change, FileRecord]]:
    """An edge purger on a fresh registry with one cache target, and an overwrite of a file."""
    registry = SQLiteRegistry(settings.data_dir / "r.db")
    await registry.open()
    edge = EdgePurger(settings, registry, [target])
    record = FileRecord("H" * 20, "k", "S3", "local", "default", "key", "f", "text/plain")
    try:
        yield (
            edge,
            registry,
            Change(events.OVERWRITE, App("k", "s"), record, previous=record),
            record,
        )
    finally:
        await edge.close()
        await registry.close()


async def test_the_edge_purges_in_the_write_step_and_never_blocks_as_a_sink(
    tmp_path: Path,
) -> None:
    target = Hanging()
    settings = Settings(data_dir=tmp_path, edge_purge_timeout=0.3)
    async with overwrite_purged(settings, target) as (edge, registry, change, record):
        loop = asyncio.get_running_loop()
        started = loop.time()
        await asyncio.wait_for(edge.publish(change), 0.05)  # the sink: no network wait
        assert target.asked == []
        await edge.purge(change)  # the write's step: waits for the target, bounded
        assert 0.25 < loop.time() - started < 1.0 and target.asked == [[record.handle]]
        queued = await registry.claim_purges("w", time.time() + 3600, 30, 10)
        assert [(p.cache, p.tag) for p in queued] == [(target.name, record.handle)]


class Answering(Hanging):
    """A cache target that acknowledges at once, and notes when it was asked."""

    def __init__(self) -> None:
        super().__init__()
        self.times: list[float] = []

    async def purge(self, tags: Sequence[str], timeout: float) -> str | None:
        self.asked.append(tags)
        self.times.append(asyncio.get_running_loop().time())
        return None


async def test_the_purge_is_echoed_once_more_when_a_render_of_the_old_version_is_over(
    tmp_path: Path,
) -> None:
    """A render of the old version that took seconds (a large photo to AVIF) reached the
    cache after the purge and its echo 2 s later, and was kept for a day: the purge is
    sent again when any job that read the old version is over (its wait, its deadline,
    the kill's grace)."""
    target = Answering()
    settings = Settings(data_dir=tmp_path, processing_wait_seconds=0.5, processing_job_seconds=1)
    async with overwrite_purged(settings, target) as (edge, _, change, record):
        loop = asyncio.get_running_loop()
        written = loop.time()
        await edge.publish(change)
        await asyncio.sleep(4.0)
        assert target.asked == [[record.handle]] * 2
        delays = [at - written for at in target.times]
        assert len(delays) == 2, delays  # the echo, then 0.5 + 1 + 2
        assert abs(delays[0] - 2.0) < 0.4 and abs(delays[1] - 3.5) < 0.4, delays


@given(
    before=st.builds(App, st.just("k"), st.just("s"), st.text(max_size=3), st.booleans()),
    security=st.booleans(),
    storage=st.sampled_from([{}, {"S3": {"type": "local"}}]),
    name=st.text(max_size=3),
)
def test_an_app_update_purges_exactly_when_its_rules_change(
    before: App, security: bool, storage: dict[str, object], name: str
) -> None:
    now = dataclasses.replace(before, name=name, security=security, storage=storage)
    tags = stale_tags(Change(events.APP_UPDATE, now, previous_app=before))
    changed = (before.security, before.storage) != (security, storage)
    assert tags == ([app_tag("k")] if changed else [])


@pytest.mark.parametrize(
    "action, tagged",
    [
        (events.STORE, False),
        (events.OVERWRITE, True),
        (events.DELETE, True),
        (events.APP_CREATE, False),
        (events.APP_DELETE, True),
    ],
)
def test_what_each_change_makes_stale(action: str, tagged: bool) -> None:
    record = FileRecord("H" * 20, "k", "S3", "local", "default", "key", "f", "text/plain")
    is_file = action in events.FILE_ACTIONS
    change = Change(action, App("k", "s"), record if is_file else None)
    expected = ([record.handle] if is_file else [app_tag("k")]) if tagged else []
    assert stale_tags(change) == expected
