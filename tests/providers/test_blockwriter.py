"""The local provider's block writer: byte-exact files of every size and chunking, written
with O_DIRECT where the file system takes it, and errors that surface unchanged."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import os
import random
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from stowage import errors
from stowage.storage import blockwriter
from stowage.storage.base import WriteOptions
from stowage.storage.blockwriter import BLOCK, BlockWriter
from stowage.storage.local import LocalProvider


async def _chunks(data: bytes, sizes: list[int]) -> AsyncIterator[bytes]:
    at, turn = 0, 0
    while at < len(data):
        size = sizes[turn % len(sizes)]
        yield data[at : at + size]
        at, turn = at + size, turn + 1


@contextlib.contextmanager
def _no_guard() -> Iterator[None]:
    yield


def _direct_supported(folder: Path) -> bool:
    try:
        fd = os.open(folder / "probe", os.O_WRONLY | os.O_CREAT | os.O_DIRECT, 0o600)
    except OSError:
        return False
    os.close(fd)
    return True


SIZES = [0, 1, 4095, 4096, 4097, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK + 4096, 3 * BLOCK + 5000]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("chunking", [[256 * 1024], [1], [65536, 7, 300_001], [5 * BLOCK]])
async def test_every_size_and_chunking_is_written_exactly(
    tmp_path: Path, size: int, chunking: list[int]
) -> None:
    if size > 4097 and chunking == [1]:
        chunking = [4093]  # one byte at a time: only for the small sizes
    data = random.Random(size).randbytes(size)
    path = tmp_path / "out"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    writer = BlockWriter(fd, _no_guard)
    try:
        await writer.write_all(_chunks(data, chunking))
        os.fsync(fd)
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    finally:
        os.close(fd)
    assert path.read_bytes() == data
    # Whole blocks went around the page cache; the file ends with O_DIRECT off again
    # only if a tail had to be written through the cache.
    went_direct = size >= BLOCK and _direct_supported(tmp_path)
    assert writer.direct == (went_direct and size % 4096 == 0)
    assert bool(flags & os.O_DIRECT) == writer.direct


async def test_a_failing_source_leaves_no_write_running(tmp_path: Path) -> None:
    async def broken() -> AsyncIterator[bytes]:
        yield b"a" * (BLOCK + 10)
        yield b"b" * BLOCK
        raise errors.BadRequest("the request body broke off")

    fd = os.open(tmp_path / "out", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    writer = BlockWriter(fd, _no_guard)
    try:
        with pytest.raises(errors.BadRequest):
            await writer.write_all(broken())
        assert writer._pending is None  # the block in flight was waited for
    finally:
        os.close(fd)


async def test_local_provider_stores_large_objects_exactly(tmp_path: Path) -> None:
    provider = LocalProvider(tmp_path / "root")
    data = random.Random(7).randbytes(5 * BLOCK + 12345)
    info = await provider.write("c", "k/big.bin", _chunks(data, [262_144, 999]), WriteOptions())
    assert info.size == len(data)
    assert (tmp_path / "root" / "objects" / "c" / "k" / "big.bin").read_bytes() == data
    assert list((tmp_path / "root" / "tmp").iterdir()) == []


async def test_a_cancelled_write_waits_for_its_block_and_leaves_nothing(tmp_path: Path) -> None:
    provider = LocalProvider(tmp_path / "root")
    handed = asyncio.Event()

    async def stalls() -> AsyncIterator[bytes]:
        yield b"x" * (3 * BLOCK)  # three blocks handed to the thread, one by one
        handed.set()
        await asyncio.Event().wait()  # a client that stops sending
        yield b""

    task = asyncio.create_task(provider.write("c", "k", stalls(), WriteOptions()))
    await asyncio.wait_for(handed.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert list((tmp_path / "root" / "tmp").iterdir()) == []
    assert not (tmp_path / "root" / "objects" / "c" / "k").exists()


async def test_reused_buffers_carry_nothing_from_the_last_write(tmp_path: Path) -> None:
    """Aligned buffers go back to a small pool: a later, shorter write must not pick up the
    bytes an earlier one left in them."""
    from stowage.storage import blockwriter

    provider = LocalProvider(tmp_path)
    first = b"\xaa" * (2 * BLOCK + 12345)
    second = random.Random(3).randbytes(BLOCK + 4096 + 17)
    await provider.write("default", "first", _chunks(first, [300_001]), WriteOptions())
    pooled = list(blockwriter._IDLE)
    assert pooled, "the first write's buffers were not kept"
    await provider.write("default", "second", _chunks(second, [65536]), WriteOptions())
    assert (tmp_path / "objects" / "default" / "first").read_bytes() == first
    assert (tmp_path / "objects" / "default" / "second").read_bytes() == second
    assert any(any(b is p for p in pooled) for b in blockwriter._IDLE)  # reused, returned
    assert len(blockwriter._IDLE) <= blockwriter._IDLE_MAX


async def test_a_direct_write_refused_midway_is_written_again_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file system that takes part of a direct write, then refuses (EINVAL): the block is
    written again from its start through the page cache, never twice in a row."""
    if not _direct_supported(tmp_path):
        pytest.fail("this test needs a file system that takes O_DIRECT (the project's disk)")
    real_write = os.write
    refused: list[int] = []

    def flaky_write(fd: int, data: bytes | memoryview) -> int:
        if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_DIRECT:
            if not refused:  # half of the first block goes down, then the refusal
                refused.append(fd)
                return real_write(fd, memoryview(data)[: len(data) // 2])
            raise OSError(errno.EINVAL, "Invalid argument")
        return real_write(fd, data)

    monkeypatch.setattr(blockwriter.os, "write", flaky_write)
    data = random.Random(7).randbytes(2 * BLOCK + 12345)
    path = tmp_path / "out"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    writer = BlockWriter(fd, _no_guard)
    try:
        await writer.write_all(_chunks(data, [1 << 20]))
    finally:
        os.close(fd)
    assert refused and writer.direct is False
    assert path.read_bytes() == data
