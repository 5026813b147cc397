"""The spool of derivatives being made (processing/spool.py): its folder is made once,
made again if it was removed while the server ran, and old leftovers are swept."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from stowage.processing.spool import SPOOL_PREFIX, SPOOL_STALE_SECONDS, Spool


def test_the_folder_is_made_at_start_and_files_are_new_and_empty(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "tmp")
    assert spool.folder.is_dir()
    first, second = spool.new(".webp"), spool.new(".webp")
    assert first != second and first.parent == spool.folder
    assert first.name.startswith(SPOOL_PREFIX) and first.suffix == ".webp"
    assert first.stat().st_size == 0


def test_a_folder_removed_while_serving_is_made_again(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "tmp")
    shutil.rmtree(spool.folder)
    made = spool.new(".jpg")
    assert made.is_file() and made.parent == spool.folder


def test_held_files_are_removed_and_only_old_leftovers_are_swept(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "tmp")
    with spool.held(".png") as path:
        assert path.is_file()
    assert not path.exists()
    old, young = spool.new(".png"), spool.new(".png")
    stale = time.time() - SPOOL_STALE_SECONDS - 10
    os.utime(old, (stale, stale))
    Spool(spool.folder)  # a restart sweeps
    assert not old.exists() and young.exists()
