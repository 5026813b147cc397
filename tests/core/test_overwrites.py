"""Overwrite intents (core/overwrites.py, checklist 49): recorded before the provider
commits, dropped by the row update, settled from what storage holds when a crash or a
failed commit left one; a write that lost a race never records one."""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from stowage import errors
from stowage.core import integrity, overwrites
from stowage.registry.base import FileRecord, OverwriteIntent
from stowage.storage.base import Chunks, ObjectInfo, WriteOptions
from tests.api.harness import Harness, harness, settings
from tests.api.test_file_ops import basic, handle_of

__all__ = ["harness", "settings"]
AUTH = basic("app", "open-secret")


async def _stored(harness: Harness, data: bytes) -> FileRecord:
    record = await harness.service.registry.get(handle_of(await harness.store(data)))
    assert record is not None
    return record


def _intent(record: FileRecord, data: bytes) -> OverwriteIntent:
    """The intent an overwrite of ``record`` with ``data`` records."""
    sha = hashlib.sha256(data).hexdigest()
    return overwrites.intent_for(record.with_(size=len(data), sha256=sha, version=2))


async def _row_describes(harness: Harness, handle: str, data: bytes, version: int) -> None:
    content = await (await harness.api.get(f"/api/file/{handle}")).read()
    row = await harness.service.registry.get(handle)
    assert content == data
    assert row is not None and row.version == version
    assert (row.size, row.sha256) == (len(data), hashlib.sha256(data).hexdigest())
    assert await harness.service.registry.overwrite_intents(time.time() + 60) == []


async def test_an_overwrite_leaves_no_intent_behind(harness: Harness) -> None:
    record = await _stored(harness, b"v1")
    resp = await harness.api.post(f"/api/file/{record.handle}", data=b"v2 v2", headers=AUTH)
    assert resp.status == 200
    await _row_describes(harness, record.handle, b"v2 v2", version=2)


async def test_recovery_adopts_an_intent_whose_bytes_are_stored(harness: Harness) -> None:
    """The crash came after the provider's commit: the row takes the intent."""
    record = await _stored(harness, b"v1")
    assert await harness.service.registry.intend_overwrite(_intent(record, b"new bytes"))
    harness.object_path(harness.open_app, record.key).write_bytes(b"new bytes")
    assert await harness.parts.recovery.recover() >= 1
    await _row_describes(harness, record.handle, b"new bytes", version=2)


@pytest.mark.parametrize("stored", [b"v1", b"old bytes", None])
async def test_recovery_drops_an_intent_whose_bytes_never_arrived(
    harness: Harness, stored: bytes | None
) -> None:
    """The crash came before the commit (or the commit was lost): the old row stays. Same
    size as the intent's bytes (b"old bytes"): the hash decides. No object: nothing to
    adopt."""
    record = await _stored(harness, b"v1")
    assert await harness.service.registry.intend_overwrite(_intent(record, b"new bytes"))
    path = harness.object_path(harness.open_app, record.key)
    if stored is None:
        path.unlink()
    else:
        path.write_bytes(stored)
    await harness.parts.recovery.recover()
    row = await harness.service.registry.get(record.handle)
    assert row == record
    assert await harness.service.registry.overwrite_intents(time.time() + 60) == []


async def test_an_intent_is_not_judged_while_its_handle_is_locked(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A live overwrite holds the handle's lock: recovery leaves its intent alone."""
    monkeypatch.setattr(overwrites, "LOCK_WAIT", 0.2)
    record = await _stored(harness, b"v1")
    intent = _intent(record, b"new bytes")
    assert await harness.service.registry.intend_overwrite(intent)
    async with harness.service.registry.handle_lock(record.handle):
        assert (
            await overwrites.settle_all(
                harness.service.registry, harness.service.providers, time.time() + 60
            )
            == 0
        )
    assert await harness.service.registry.overwrite_intents(time.time() + 60) == [intent]


async def test_a_write_that_lost_a_race_records_no_intent_and_commits_nothing(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Even without the handle's lock (as if it had been lost): writer A read version 1,
    B committed version 2 while A's body was still arriving. A's intent is refused, so A
    never commits: B's version stays whole and described."""

    @asynccontextmanager
    async def no_lock(handle: str) -> AsyncIterator[None]:
        yield

    monkeypatch.setattr(harness.service.registry, "handle_lock", no_lock)
    record = await _stored(harness, b"v1")
    release = asyncio.Event()

    async def slow_body() -> AsyncIterator[bytes]:
        yield b"A" * 4096
        await release.wait()
        yield b"A" * 4096

    url = f"/api/file/{record.handle}"
    loser = asyncio.create_task(harness.api.post(url, data=slow_body(), headers=AUTH))
    tmp = harness.settings.data_dir / "storage" / harness.open_app.api_key / "tmp"
    while not any(tmp.iterdir()):  # A is writing: it read version 1
        await asyncio.sleep(0.01)
    assert (await harness.api.post(url, data=b"B" * 100, headers=AUTH)).status == 200
    release.set()
    assert (await loser).status == 409
    await _row_describes(harness, record.handle, b"B" * 100, version=2)
    assert list(tmp.iterdir()) == []


async def test_a_commit_whose_answer_was_lost_is_settled_at_once(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The provider committed, then raised (a lost answer): the client gets the error and
    the row describes the bytes storage holds, without waiting for a restart."""
    record = await _stored(harness, b"v1")
    provider = harness.service.providers.provider_for(harness.open_app, "S3")
    write = provider.write

    async def commit_then_fail(
        container: str, key: str, chunks: Chunks, options: WriteOptions
    ) -> ObjectInfo:
        await write(container, key, chunks, options)
        raise errors.StorageUnavailable("the answer to the commit was lost")

    monkeypatch.setattr(provider, "write", commit_then_fail)
    resp = await harness.api.post(f"/api/file/{record.handle}", data=b"v2 v2", headers=AUTH)
    assert resp.status == 503
    await _row_describes(harness, record.handle, b"v2 v2", version=2)


async def test_a_commit_refused_after_the_body_ended_keeps_the_old_row(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = await _stored(harness, b"v1")
    provider = harness.service.providers.provider_for(harness.open_app, "S3")

    async def refuse_commit(
        container: str, key: str, chunks: Chunks, options: WriteOptions
    ) -> ObjectInfo:
        async for _chunk in chunks:
            pass
        raise errors.StorageUnavailable("the commit was refused")

    monkeypatch.setattr(provider, "write", refuse_commit)
    resp = await harness.api.post(f"/api/file/{record.handle}", data=b"v2 v2", headers=AUTH)
    assert resp.status == 503
    await _row_describes(harness, record.handle, b"v1", version=1)


async def test_a_body_below_the_policy_min_size_is_refused_before_the_commit(
    harness: Harness,
) -> None:
    """minSize is known only once the body ended: it is checked before the provider
    commits, so the refused body never replaces the stored one."""
    app = harness.secure_app
    handle = handle_of(await harness.store(b"long enough", app=app))
    policy = harness.policy(app, call=["write", "read"], handle=handle, minSize=5)
    resp = await harness.api.post(f"/api/file/{handle}", params=policy, data=b"tiny")
    assert resp.status == 422
    content = await (await harness.api.get(f"/api/file/{handle}", params=policy)).read()
    row = await harness.service.registry.get(handle)
    assert content == b"long enough" and row is not None and row.size == len(content)


async def test_fsck_reports_an_unsettled_overwrite_and_repair_settles_it(
    harness: Harness,
) -> None:
    record = await _stored(harness, b"v1")
    assert await harness.service.registry.intend_overwrite(_intent(record, b"new bytes"))
    harness.object_path(harness.open_app, record.key).write_bytes(b"new bytes")
    report = await integrity.fsck(harness.service.registry, harness.service.providers)
    assert report.unsettled == [record.handle] and not report.clean
    report = await integrity.fsck(harness.service.registry, harness.service.providers, repair=True)
    assert report.repaired == 1
    assert (await integrity.fsck(harness.service.registry, harness.service.providers)).clean
    await _row_describes(harness, record.handle, b"new bytes", version=2)
