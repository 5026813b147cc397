"""A local file opened for a download is named by the row of the bytes it holds, wherever
an overwrite's rename lands: before the open, between the open and its ``fstat`` (the
old inode's ctime is then the rename's, not the time it took the path), or after; with
the row not yet updated (the intent pending) or already updated."""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stowage import errors
from stowage.core.conditions import content_etag
from stowage.core.reading import Download
from stowage.http import pinned
from stowage.registry.base import FileRecord, OverwriteIntent
from stowage.storage.base import ObjectInfo

STEPS = ["before open", "between open and fstat", "after fstat", "never"]


def _record(data: bytes, version: int) -> FileRecord:
    sha = hashlib.sha256(data).hexdigest()
    return FileRecord(
        "H" * 20, "k", "S3", "local", "c", "obj", "x", "a/b", len(data), sha, version=version
    )


class Rows:
    def __init__(self, row: FileRecord, intent: OverwriteIntent | None) -> None:
        self.row, self.intent = row, intent

    async def get(self, handle: str) -> FileRecord | None:
        return self.row

    async def pending_overwrite(self, handle: str) -> OverwriteIntent | None:
        return self.intent


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    old_size=st.integers(1, 300),
    same_size=st.booleans(),
    step=st.sampled_from(STEPS),
    committed=st.booleans(),
    gap=st.sampled_from([0.0, 0.03]),
)
def test_the_row_named_is_the_row_of_the_bytes_read(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    old_size: int,
    same_size: bool,
    step: str,
    committed: bool,
    gap: float,
) -> None:
    folder = tmp_path_factory.mktemp("pin")
    path = folder / "obj"
    old = os.urandom(old_size)
    new = os.urandom(old_size if same_size else old_size + 7)
    path.write_bytes(old)
    time.sleep(gap)  # the old version took its path a while before the overwrite began
    row, after = _record(old, 1), _record(new, 2)
    intent = OverwriteIntent(after.handle, 2, after.size, after.sha256, after.mimetype)
    rows = Rows(row, intent)

    def rename() -> None:
        (folder / "tmp").write_bytes(new)
        os.replace(folder / "tmp", path)
        if committed:  # the row's update (which drops the intent) follows at once
            rows.row, rows.intent = after, None

    if step == "before open":
        rename()
    real_fstat, calls = os.fstat, [0]

    def fstat(fd: int) -> Any:
        calls[0] += 1
        if step == "between open and fstat" and calls[0] == 2:
            rename()
        found = real_fstat(fd)
        if step == "after fstat" and calls[0] == 2:
            rename()
        return found

    monkeypatch.setattr(pinned.os, "fstat", fstat)
    plan = Download(row, ObjectInfo(len(old), "", 0), None, path, None)  # type: ignore[arg-type]
    try:
        found, fd = asyncio.run(pinned.pinned(plan, rows))  # type: ignore[arg-type]
    except errors.StorageVersionChanged:  # the one refusal: retryable
        return
    try:
        body = os.read(fd, 10_000)
    finally:
        os.close(fd)
    assert content_etag(found.record) == hashlib.sha256(body).hexdigest()[:32], step
    assert found.record.size == len(body)


def test_a_derivative_removed_before_its_open_asks_for_the_new_one(tmp_path: Path) -> None:
    plan = Download(_record(b"x", 1), ObjectInfo(1, "", 0), None, tmp_path / "gone", None)  # type: ignore[arg-type]
    with pytest.raises(errors.StorageVersionChanged):
        asyncio.run(pinned.pinned(plan, None))
