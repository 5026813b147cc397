"""Small async stream stages: each takes chunks and yields chunks, bounded memory."""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import os
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor

from stowage import errors

Chunks = AsyncIterator[bytes]


async def file_chunks(
    path: str | os.PathLike[str], size: int = 256 * 1024
) -> AsyncGenerator[bytes, None]:
    """A file of this node's disk in chunks of ``size``, each read in a thread: a read
    that misses the page cache waits for the disk there, not on the event loop."""
    handle = await asyncio.to_thread(open, path, "rb")
    try:
        while chunk := await asyncio.to_thread(handle.read, size):
            yield chunk
    finally:
        handle.close()


async def limited(chunks: Chunks, max_bytes: int, message: str) -> Chunks:
    total = 0
    async for chunk in chunks:
        total += len(chunk)
        if total > max_bytes:
            raise errors.PayloadTooLarge(message, limit=max_bytes)
        yield chunk


async def then(chunks: Chunks, at_end: Callable[[], Awaitable[None]]) -> Chunks:
    """Awaits ``at_end`` once ``chunks`` ran dry, before the consumer sees the end: a
    provider's write commits only after it returned, and not at all if it raised."""
    async for chunk in chunks:
        yield chunk
    await at_end()


async def idle_timeout(chunks: Chunks, seconds: float) -> Chunks:
    """Fails with RequestTimeout when one wait for the next chunk lasts ``seconds``. One
    timer serves the whole stream (``asyncio.timeout`` per chunk scheduled and cancelled
    a timer for every chunk: measurable CPU on a large body); time spent downstream,
    between two waits, does not count."""
    watch = _IdleWatch(seconds)
    iterator = aiter(chunks)
    try:
        while True:
            watch.begin()
            try:
                chunk = await anext(iterator)
            except StopAsyncIteration:
                return
            except asyncio.CancelledError as exc:
                if watch.expired():
                    raise errors.RequestTimeout() from exc
                raise
            finally:
                watch.end()
            yield chunk
    finally:
        watch.close()


class _IdleWatch:
    """Cancels the waiting task once a wait has lasted ``seconds``, as ``asyncio.timeout``
    does, and turns that cancellation (only that one) back into a timeout."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._loop = asyncio.get_running_loop()
        self._task: asyncio.Task[object] | None = None
        self._since: float | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._fired = False

    def begin(self) -> None:
        self._task = asyncio.current_task()
        self._since = self._loop.time()
        if self._timer is None:
            self._timer = self._loop.call_at(self._since + self.seconds, self._check)

    def end(self) -> None:
        self._since = None

    def expired(self) -> bool:
        if not self._fired or self._task is None:
            return False
        self._fired = False
        return self._task.uncancel() == 0

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _check(self) -> None:
        now, since = self._loop.time(), self._since
        if since is not None and now - since >= self.seconds and self._task is not None:
            self._timer, self._fired = None, True
            self._task.cancel()
            return
        self._timer = self._loop.call_at(
            (now if since is None else since) + self.seconds, self._check
        )


async def base64_decoded(chunks: Chunks) -> Chunks:
    """Decode standard or URL-safe base64 as it streams; whitespace is ignored."""
    pending = b""
    padded = False  # padding ends the data: nothing may follow, however the body was split
    async for chunk in chunks:
        data = pending + b"".join(chunk.split())
        if padded and data:
            raise errors.InvalidBase64("data after base64 padding")
        cut = len(data) - len(data) % 4
        pending = data[cut:]
        if cut:
            padded = data[cut - 1 : cut] == b"="
            yield _b64(data[:cut])
    if pending:
        if padded:
            raise errors.InvalidBase64("data after base64 padding")
        yield _b64(pending + b"=" * (-len(pending) % 4))


def _b64(data: bytes) -> bytes:
    try:
        return base64.b64decode(data.translate(bytes.maketrans(b"-_", b"+/")), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise errors.InvalidBase64() from exc


# Hashing releases the GIL: it runs in a thread while the loop receives the next chunks.
# Chunks are handed over in batches of at least _HASH_BATCH bytes (a thread hand-off costs
# about as much CPU as hashing 20 KiB), at most one batch in flight, so order is kept.
_HASH_POOL = ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="digest")
_HASH_BATCH = 4 * 1024 * 1024


class Digest:
    """Counts and hashes what flows through ``tap``."""

    def __init__(self) -> None:
        self.size = 0
        self._sha256 = hashlib.sha256()

    async def tap(self, chunks: Chunks) -> Chunks:
        pending: asyncio.Future[None] | None = None
        batch: list[bytes] = []
        batched = 0
        async for chunk in chunks:
            self.size += len(chunk)
            batch.append(chunk)
            batched += len(chunk)
            if batched >= _HASH_BATCH:
                if pending is not None:
                    await pending
                loop = asyncio.get_running_loop()
                pending = loop.run_in_executor(_HASH_POOL, self._update, batch)
                batch, batched = [], 0
            yield chunk
        if pending is not None:
            await pending
        self._update(batch)  # the last, short batch: not worth a thread

    def _update(self, batch: list[bytes]) -> None:
        for chunk in batch:
            self._sha256.update(chunk)

    @property
    def sha256(self) -> str:
        return self._sha256.hexdigest()


async def peek(chunks: Chunks, want: int) -> tuple[bytes, Chunks]:
    """Read at least ``want`` bytes (or all there is) and return them with a stream that
    still yields everything from the start."""
    iterator = aiter(chunks)
    head: list[bytes] = []
    have = 0
    while have < want:
        try:
            chunk = await anext(iterator)
        except StopAsyncIteration:
            break
        head.append(chunk)
        have += len(chunk)

    async def replay() -> Chunks:
        for chunk in head:
            yield chunk
        async for chunk in iterator:
            yield chunk

    return b"".join(head)[:want], replay()
