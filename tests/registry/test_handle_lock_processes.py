"""The SQLite registry's handle lock holds across processes (``--workers N`` share it)."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import time
from pathlib import Path

from stowage.registry import locks
from stowage.registry.sqlite import SQLiteRegistry

HANDLE = "H" * 20
HOLD = 1.0

CHILD = """
import asyncio, sys, time
from pathlib import Path
from stowage.registry.sqlite import SQLiteRegistry

async def main():
    registry = SQLiteRegistry(Path(sys.argv[1]))
    await registry.open()
    async with registry.handle_lock(sys.argv[2]):
        print("held", flush=True)
        time.sleep(float(sys.argv[3]))
        print("releasing", flush=True)
    await registry.close()

asyncio.run(main())
"""


def _holder(db: Path, handle: str = HANDLE) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(db), handle, str(HOLD)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "held"
    return child


async def test_two_processes_never_hold_one_handle_lock(tmp_path: Path) -> None:
    db = tmp_path / "stowage.db"
    registry = SQLiteRegistry(db)
    await registry.open()
    try:
        child = _holder(db)
        started = time.monotonic()
        async with registry.handle_lock(HANDLE):
            waited = time.monotonic() - started
            assert child.stdout is not None
            # The child released before we got in: its last line is already written.
            assert child.stdout.readline().strip() == "releasing"
        assert waited >= HOLD * 0.8
        assert child.wait(10) == 0
    finally:
        await registry.close()


async def test_other_handles_are_not_blocked_by_another_process(tmp_path: Path) -> None:
    db = tmp_path / "stowage.db"
    registry = SQLiteRegistry(db)
    await registry.open()
    try:
        child = _holder(db)
        started = time.monotonic()
        async with registry.handle_lock("G" * 20):
            assert time.monotonic() - started < HOLD / 2
        assert child.wait(10) == 0
    finally:
        await registry.close()


async def test_cancelled_waiter_leaves_the_lock_free(tmp_path: Path) -> None:
    db = tmp_path / "stowage.db"
    registry = SQLiteRegistry(db)
    await registry.open()
    try:
        child = _holder(db)

        async def wait_for_lock() -> None:
            async with registry.handle_lock(HANDLE):
                raise AssertionError("got a lock another process holds")

        with_timeout = asyncio.wait_for(wait_for_lock(), HOLD / 4)
        with contextlib.suppress(TimeoutError):
            await with_timeout
        assert child.wait(10) == 0
        async with registry.handle_lock(HANDLE):  # free again, and not held by a ghost
            pass
        assert list((tmp_path / "locks").iterdir()) == []  # lock files are removed
    finally:
        await registry.close()


def test_unlinked_lock_file_is_not_a_lock(tmp_path: Path) -> None:
    path = locks.lock_path(tmp_path, HANDLE)
    fd = locks.try_acquire(path)
    assert fd is not None
    assert locks.try_acquire(path) is None  # a second open file description is refused
    locks.release(path, fd)
    again = locks.try_acquire(path)
    assert again is not None
    locks.release(path, again)
