"""Per-handle locks that hold across the worker processes sharing one data directory.

A lock is ``flock`` on ``<locks dir>/<sha256(handle)[:32]>.lock``. It is taken with
``LOCK_NB`` and retried with a short back-off on the event loop, never in a blocking
thread: a cancelled waiter then cannot acquire the lock later in the background and
leave it held. The holder unlinks the file before closing it, so lock files do not pile
up; a waiter that opened the unlinked file sees that its inode is no longer the one at
the path and starts over on the new file.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

FIRST_WAIT = 0.001
LONGEST_WAIT = 0.05


def lock_path(directory: Path, handle: str) -> Path:
    return directory / f"{hashlib.sha256(handle.encode()).hexdigest()[:32]}.lock"


def try_acquire(path: Path) -> int | None:
    """The locked descriptor, or None when another holder has the lock."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    try:
        current = os.stat(path)
    except FileNotFoundError:
        current = None
    if current is None or current.st_ino != os.fstat(fd).st_ino:
        os.close(fd)  # the holder before us unlinked it: this file is no lock any more
        return None
    return fd


def release(path: Path, fd: int) -> None:
    try:
        os.unlink(path)
    finally:
        os.close(fd)


@asynccontextmanager
async def file_lock(directory: Path, handle: str) -> AsyncIterator[None]:
    path = lock_path(directory, handle)
    wait = FIRST_WAIT
    while (fd := try_acquire(path)) is None:
        await asyncio.sleep(wait)
        wait = min(wait * 2, LONGEST_WAIT)
    try:
        yield
    finally:
        release(path, fd)
