"""The parts of one S3 multipart upload, several in flight at once.

One part in flight leaves the link idle while each part's request starts and ends, and
a single TCP stream rarely fills it anyway: S3 clients (boto3's transfer manager, the
AWS CLI) send parts concurrently for that reason. ``add`` waits while ``concurrency``
parts are in flight, so a write holds at most ``concurrency`` parts being sent plus the
one being read from the client. The first failed part fails the write at the next
``add`` or at ``finish``; ``close`` cancels and awaits whatever still runs, so the caller
can abort the upload knowing that no part request is still on its way.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import AsyncIterator, Coroutine
from typing import Any

Part = dict[str, Any]  # {"PartNumber": n, "ETag": "..."}, as CompleteMultipartUpload takes it


class PartUploads:
    def __init__(self, concurrency: int) -> None:
        self.concurrency = max(1, concurrency)
        self.count = 0
        self._running: set[asyncio.Task[Part]] = set()
        self._done: list[Part] = []

    async def add(self, upload: Coroutine[Any, Any, Part]) -> None:
        """Starts one part's upload once there is room; raises a failed part's error."""
        try:
            self._collect()
            while len(self._running) >= self.concurrency:
                await asyncio.wait(self._running, return_when=asyncio.FIRST_COMPLETED)
                self._collect()
        except BaseException:
            upload.close()  # never started: no "never awaited" warning
            raise
        self.count += 1
        self._running.add(asyncio.create_task(upload))

    async def finish(self) -> list[Part]:
        """Waits for every part; returns them in part order."""
        while self._running:
            await asyncio.wait(self._running, return_when=asyncio.FIRST_COMPLETED)
            self._collect()
        return sorted(self._done, key=lambda part: int(part["PartNumber"]))

    async def close(self) -> None:
        """Cancels the parts still running and waits until they have stopped."""
        running, self._running = self._running, set()
        for task in running:
            task.cancel()
        for task in running:
            with contextlib.suppress(BaseException):
                await task

    def _collect(self) -> None:
        for task in [t for t in self._running if t.done()]:
            self._running.discard(task)
            self._done.append(task.result())  # a failed part raises here


class PartBuffer:
    """The source's chunks, gathered into parts: each byte is copied once, when its part is
    joined (a growing bytearray copied every byte twice: appending, then cutting a part)."""

    def __init__(self, source: AsyncIterator[bytes]) -> None:
        self._source = source
        self._chunks: collections.deque[bytes] = collections.deque()
        self.have = 0
        self.done = False  # the source ran dry

    async def fill(self, limit: int) -> None:
        """Reads until ``limit`` bytes are held or the source ends."""
        while self.have < limit and not self.done:
            try:
                chunk = await anext(self._source)
            except StopAsyncIteration:
                self.done = True
                break
            if chunk:
                self._chunks.append(chunk)
                self.have += len(chunk)

    def take(self, limit: int) -> bytes:
        """Up to ``limit`` bytes from the front, as one bytes object."""
        taken: list[bytes] = []
        count = 0
        while self._chunks and count < limit:
            chunk = self._chunks.popleft()
            room = limit - count
            if len(chunk) > room:
                self._chunks.appendleft(chunk[room:])
                chunk = chunk[:room]
            taken.append(chunk)
            count += len(chunk)
        self.have -= count
        return b"".join(taken)
