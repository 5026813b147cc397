"""Handle locks and exclusive jobs (``Locks``) of the SQLite registry.

Worker processes share the registry file: a file lock under ``<data dir>/locks``
serialises them (``registry/locks.py``); an in-process lock taken first keeps one waiter
per handle per process polling the file lock.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from stowage.registry import locks


class SQLiteLocks:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    def setup(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)

    @asynccontextmanager
    async def handle_lock(self, handle: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(handle, (asyncio.Lock(), 0))
        self._locks[handle] = (lock, users + 1)
        try:
            async with lock, locks.file_lock(self.directory, handle):
                yield
        finally:
            lock, users = self._locks[handle]
            if users == 1:
                del self._locks[handle]
            else:
                self._locks[handle] = (lock, users - 1)

    @asynccontextmanager
    async def exclusive(self, job: str) -> AsyncIterator[bool]:
        path = locks.lock_path(self.directory, f"job:{job}")
        fd = locks.try_acquire(path)
        try:
            yield fd is not None
        finally:
            if fd is not None:
                locks.release(path, fd)
