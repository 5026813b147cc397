"""A file overwritten or deleted after the backup's registry snapshot and before its copy:
the backup's row follows the live row, so every row describes the bytes beside it."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from stowage.migration import backup
from tests.api.harness import Harness, harness, settings

__all__ = ["harness", "settings"]


def _rows(path: Path) -> dict[str, tuple[int, str]]:
    conn = sqlite3.connect(path)
    try:
        found = conn.execute("SELECT handle, size, sha256 FROM files WHERE state = 'stored'")
        return {h: (size, sha) for h, size, sha in found.fetchall()}
    finally:
        conn.close()


async def test_rows_follow_files_changed_after_the_snapshot(
    harness: Harness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept, changed, deleted = [await harness.store(d) for d in (b"kept", b"old", b"gone")]
    keys = {r["handle"]: r["key"] for r in (kept, changed, deleted)}
    live_db = harness.settings.registry_path
    new = b"overwritten after the snapshot"
    taken = backup.snapshot

    def snapshot_then_writes(source: Path, dest: Path) -> None:
        taken(source, dest)
        # What an overwrite and a delete commit, landing between snapshot and copy.
        harness.object_path(harness.open_app, keys[changed["handle"]]).write_bytes(new)
        harness.object_path(harness.open_app, keys[deleted["handle"]]).unlink()
        conn = sqlite3.connect(live_db)
        with conn:
            sha = hashlib.sha256(new).hexdigest()
            conn.execute(
                "UPDATE files SET size = ?, sha256 = ?, version = 2 WHERE handle = ?",
                (len(new), sha, changed["handle"]),
            )
            conn.execute("DELETE FROM files WHERE handle = ?", (deleted["handle"],))
        conn.close()

    monkeypatch.setattr(backup, "snapshot", snapshot_then_writes)
    dest = tmp_path / "backup"
    summary = await backup.Backup(harness.settings, dest, lambda h: None).run()
    assert (summary["refreshed"], summary["dropped"], summary["failed"]) == (1, 1, 0)
    rows = _rows(dest / "stowage.db")
    assert set(rows) == {kept["handle"], changed["handle"]}
    assert rows[changed["handle"]] == (len(new), hashlib.sha256(new).hexdigest())
    copied = dest / harness.object_path(harness.open_app, keys[changed["handle"]]).relative_to(
        harness.settings.data_dir
    )
    assert copied.read_bytes() == new
