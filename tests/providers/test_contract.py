"""The provider contract, written once and run against every provider on its real server."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import random
import secrets
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from stowage import errors
from stowage.core import reading
from stowage.http.responses import parse_range
from stowage.storage.base import (
    Lists,
    ObjectInfo,
    OpensSpan,
    Provider,
    WriteOptions,
    exists,
    open_span,
    pin_of,
)

OPTS = WriteOptions(content_type="application/octet-stream")


async def chunks_of(data: bytes, size: int = 64 * 1024) -> AsyncIterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


async def failing_after(data: bytes, fail_at: int) -> AsyncIterator[bytes]:
    yield data[:fail_at]
    raise errors.PayloadTooLarge("source failed mid-stream")


async def read_all(provider: Provider, key: str, start: int = 0, end: int | None = None) -> bytes:
    out = bytearray()
    async for chunk in provider.open(provider.default_container, key, start, end):
        out += chunk
    return bytes(out)


def counting_stats(provider: Provider, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The keys ``provider.stat`` is asked for from now on (the requests a read makes)."""
    stats: list[str] = []
    real_stat = provider.stat

    async def counted(container: str, key: str) -> ObjectInfo:
        stats.append(key)
        return await real_stat(container, key)

    monkeypatch.setattr(provider, "stat", counted)
    return stats


def new_key(suffix: str = "file.bin") -> str:
    return f"contract/{secrets.token_hex(6)}_{suffix}"


async def test_round_trip(provider: Provider) -> None:
    data = os.urandom(300_000)
    key = new_key()
    info = await provider.write(provider.default_container, key, chunks_of(data), OPTS)
    assert info.size == len(data)
    assert await read_all(provider, key) == data
    stat = await provider.stat(provider.default_container, key)
    assert stat.size == len(data)
    assert stat.etag


async def test_empty_object(provider: Provider) -> None:
    key = new_key("empty")
    info = await provider.write(provider.default_container, key, chunks_of(b""), OPTS)
    assert info.size == 0
    assert await read_all(provider, key) == b""


async def test_byte_ranges(provider: Provider) -> None:
    data = bytes(range(256)) * 40
    key = new_key()
    await provider.write(provider.default_container, key, chunks_of(data, 1000), OPTS)
    assert await read_all(provider, key, 4, 7) == data[4:8]
    assert await read_all(provider, key, 5000) == data[5000:]
    assert await read_all(provider, key, len(data) - 7, len(data) - 1) == data[-7:]


async def test_overwrite_replaces_whole(provider: Provider) -> None:
    key = new_key()
    await provider.write(provider.default_container, key, chunks_of(b"A" * 5000), OPTS)
    await provider.write(provider.default_container, key, chunks_of(b"B" * 10), OPTS)
    assert await read_all(provider, key) == b"B" * 10


async def test_failed_write_keeps_previous_object(provider: Provider) -> None:
    key = new_key()
    old = os.urandom(70_000)
    await provider.write(provider.default_container, key, chunks_of(old), OPTS)
    with pytest.raises(errors.PayloadTooLarge):
        await provider.write(
            provider.default_container, key, failing_after(b"X" * 9000, 4000), OPTS
        )
    assert await read_all(provider, key) == old


async def test_failed_first_write_leaves_nothing(provider: Provider) -> None:
    key = new_key()
    with pytest.raises(errors.PayloadTooLarge):
        await provider.write(
            provider.default_container, key, failing_after(b"X" * 9000, 4000), OPTS
        )
    assert not await exists(provider, provider.default_container, key)


async def test_delete(provider: Provider) -> None:
    key = new_key()
    await provider.write(provider.default_container, key, chunks_of(b"bye"), OPTS)
    await provider.delete(provider.default_container, key)
    assert not await exists(provider, provider.default_container, key)
    with pytest.raises(errors.StorageNotFound):
        await provider.delete(provider.default_container, key)


async def test_keys_lists_exactly_the_prefix(provider: Provider) -> None:
    """Every store that can hold multipart upload pieces (all but Dropbox) lists by prefix."""
    if provider.location == "dropbox":
        assert not isinstance(provider, Lists)  # pieces then stay on the node's disk
        return
    assert isinstance(provider, Lists)
    base = f"listing/{secrets.token_hex(6)}"
    names = [f"{base}/a/1-0-x", f"{base}/a/2-0-y", f"{base}/b/1-0-z", f"{base}-sibling"]
    for name in names:
        await provider.write(provider.default_container, name, chunks_of(b"k"), OPTS)
    listed = [k async for k in provider.keys(provider.default_container, f"{base}/")]
    assert sorted(listed) == names[:3]
    only_a = [k async for k in provider.keys(provider.default_container, f"{base}/a/")]
    assert sorted(only_a) == names[:2]
    assert [k async for k in provider.keys(provider.default_container, f"{base}/none/")] == []
    for name in names:
        await provider.delete(provider.default_container, name)
    assert [k async for k in provider.keys(provider.default_container, f"{base}/")] == []


async def test_missing_object(provider: Provider) -> None:
    key = new_key("missing")
    with pytest.raises(errors.StorageNotFound):
        await provider.stat(provider.default_container, key)
    with pytest.raises(errors.StorageNotFound):
        await read_all(provider, key)


@pytest.mark.parametrize("name", ["a b.txt", "q\"$%&'<>`.txt", "ünïcødé.txt", "deep/er/x.txt"])
async def test_special_key_names_round_trip(provider: Provider, name: str) -> None:
    key = new_key(name)
    await provider.write(provider.default_container, key, chunks_of(name.encode()), OPTS)
    assert await read_all(provider, key) == name.encode()
    await provider.delete(provider.default_container, key)


async def test_streamed_multi_chunk_object(provider: Provider) -> None:
    # Larger than the usual multipart thresholds (5-8 MiB), sent as many small chunks.
    block = os.urandom(1024 * 1024)
    digest = hashlib.sha256()

    async def source() -> AsyncIterator[bytes]:
        for _ in range(12):
            digest.update(block)
            yield block

    key = new_key("big.bin")
    info = await provider.write(provider.default_container, key, source(), OPTS)
    assert info.size == 12 * len(block)
    check = hashlib.sha256()
    async for chunk in provider.open(provider.default_container, key):
        check.update(chunk)
    assert check.hexdigest() == digest.hexdigest()
    await provider.delete(provider.default_container, key)


async def test_failed_multipart_sized_write_keeps_previous_object(provider: Provider) -> None:
    # Past every provider's single-request threshold, so multipart uploads, upload sessions,
    # staged blocks and large-object segments are all started and then must be abandoned.
    key = new_key()
    old = os.urandom(50_000)
    await provider.write(provider.default_container, key, chunks_of(old), OPTS)
    block = os.urandom(1024 * 1024)

    async def breaks_after_12_mib() -> AsyncIterator[bytes]:
        for _ in range(12):
            yield block
        raise errors.PayloadTooLarge("source failed after 12 MiB")

    with pytest.raises(errors.PayloadTooLarge):
        await provider.write(provider.default_container, key, breaks_after_12_mib(), OPTS)
    assert await read_all(provider, key) == old
    await provider.delete(provider.default_container, key)


# -- reads pinned to one version (issue 18) ---------------------------------------------------
#: The race below reads until RACE_READS reads (the issue's bar: 10,000 with no wrong one)
#: with RACE_READERS readers at once, and must get there: RACE_SECONDS is only a bound for
#: a server that hangs. The slowest server here (Swift's s3api) reads 230/s on a quiet
#: 2-core machine and about 95/s on a busy one, so 10,000 take 45-110 s (the bound leaves
#: room for a CI machine twice as slow again); docs/reliability.md
#: has the rates measured per provider.
RACE_READS = int(os.environ.get("STOWAGE_RACE_READS", "10000"))
RACE_SECONDS = float(os.environ.get("STOWAGE_RACE_SECONDS", "300"))
MIN_RACE_READS = int(os.environ.get("STOWAGE_MIN_RACE_READS", str(RACE_READS)))
#: The S3 provider reads its 10,000 from moto; on its second server, Swift's s3api (the
#: same provider code, another server's answers to If-Match), a race of 3,000 reads: the
#: 7,000 more cost 130 s of CPU (19 ms a read in Swift and the client) on a CI machine
#: whose every core is busy, and the bar is per provider.
SECOND_SERVER_READS = {"s3_swift": min(RACE_READS, 3000)}
RACE_READERS = int(os.environ.get("STOWAGE_RACE_READERS", "16"))
WRITER_PAUSE = 0.02  # seconds at most between one writer's overwrites


async def test_pinned_open_reads_that_version_or_refuses(provider: Provider) -> None:
    key = new_key()
    old, new = os.urandom(3000), os.urandom(4500)
    await provider.write(provider.default_container, key, chunks_of(old), OPTS)
    first = await provider.stat(provider.default_container, key)
    assert await read_pinned(provider, key, first) == old
    assert await read_pinned(provider, key, first, 100, 1999) == old[100:2000]
    await provider.write(provider.default_container, key, chunks_of(new), OPTS)
    second = await provider.stat(provider.default_container, key)
    for start, end in ((0, None), (100, 1999)):
        # The old version whole (a store that keeps it), or the refusal: never new bytes.
        with contextlib.suppress(errors.StorageVersionChanged):
            got = await read_pinned(provider, key, first, start, end)
            assert got == old[start : end and end + 1]
    assert await read_pinned(provider, key, second, 100, 1999) == new[100:2000]
    await provider.delete(provider.default_container, key)
    with pytest.raises((errors.StorageNotFound, errors.StorageVersionChanged)):
        await read_pinned(provider, key, second)


async def test_a_span_is_read_with_the_version_it_is_cut_from(
    provider: Provider, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = new_key()
    data = os.urandom(3000)
    await provider.write(provider.default_container, key, chunks_of(data), OPTS)
    stat = await provider.stat(provider.default_container, key)
    stats = counting_stats(provider, monkeypatch)
    for start, end in ((100, 1999), (0, 0), (2500, 9999)):
        stream = open_span(provider, provider.default_container, key, start, end)
        info = await anext(stream)
        assert isinstance(info, ObjectInfo)
        assert (info.size, pin_of(info)) == (3000, pin_of(stat))
        assert abs(info.modified - stat.modified) <= 1
        assert b"".join([c async for c in stream if isinstance(c, bytes)]) == data[start : end + 1]
    # One request where the store names the version a range is of: no stat before it.
    assert len(stats) == (0 if isinstance(provider, OpensSpan) else 3)
    await provider.delete(provider.default_container, key)


async def test_a_range_read_with_a_wrong_size_is_cut_from_the_version_read(
    provider: Provider,
) -> None:
    """The size a reader believes (a row's) gives the range asked first; the version found
    decides: its own range, a 416 with its size, never bytes cut for another size."""
    key = new_key()
    data = os.urandom(3000)
    await provider.write(provider.default_container, key, chunks_of(data), OPTS)
    container = provider.default_container
    for believed in (10, 2999, 3000, 3001, 50_000):
        for start, end in ((100, 1999), (2000, None), (-500, None)):
            span = _asked(start, end)
            opened = await reading.open_current(provider, container, key, span, size=believed)
            got = b"".join([c async for c in opened.chunks])
            assert (opened.info.size, opened.span) == (3000, span(3000))
            assert got == (data[start:] if end is None else data[start : end + 1])
        with pytest.raises(errors.RangeNotSatisfiable) as refused:
            await reading.open_current(provider, container, key, _asked(3000, None), size=believed)
        assert refused.value.headers["Content-Range"] == "bytes */3000"
    await provider.delete(provider.default_container, key)


def _asked(start: int, end: int | None) -> reading.Span:
    """A Range header's span: ``bytes=start-end``, ``bytes=start-``, ``bytes=-length``."""
    header = f"bytes={start}-" if start >= 0 else f"bytes={start}"
    return lambda size: parse_range(header + ("" if end is None else str(end)), size)


async def read_pinned(
    provider: Provider, key: str, info: ObjectInfo, start: int = 0, end: int | None = None
) -> bytes:
    out = bytearray()
    async for chunk in provider.open(provider.default_container, key, start, end, pin_of(info)):
        out += chunk
    return bytes(out)


async def test_readers_during_overwrites_see_whole_versions(
    provider: Provider, provider_name: str
) -> None:
    """Writers overwrite one key with distinct versions while readers read it whole and by
    ranges through ``core/reading.py``: every read is one whole version (or its slice)."""
    race_reads = SECOND_SERVER_READS.get(provider_name, RACE_READS)
    min_reads = min(MIN_RACE_READS, race_reads)
    key = new_key("raced.bin")
    versions = [os.urandom(1000 + 97 * i) for i in range(8)]
    by_hash = {hashlib.sha256(v).hexdigest(): v for v in versions}
    await provider.write(provider.default_container, key, chunks_of(versions[0]), OPTS)
    stop = asyncio.Event()
    reads, refused, unavailable, written, unwritten, wrong = [0], [0], [0], [0], [0], []

    async def writer(n: int) -> None:
        rng, i = random.Random(-n), n
        while not stop.is_set():
            i = (i + 3) % len(versions)
            try:
                await provider.write(provider.default_container, key, chunks_of(versions[i]), OPTS)
                written[0] += 1
            except (errors.StorageUnavailable, errors.StorageConflict):
                # Swift overloaded by 16 readers answers 503, and a PUT that the other
                # writer's newer one beat is refused (Swift: 202): that write failed whole,
                # and the race goes on (counted; the overwrites that did commit are bounded).
                unwritten[0] += 1
            await asyncio.sleep(rng.random() * WRITER_PAUSE)

    async def reader(n: int) -> None:
        rng = random.Random(n)
        while not stop.is_set():
            start = rng.randrange(0, 900)
            span = _span(start, 300) if n % 2 else None
            # A quarter of the readers believe a size (a row's, often stale): one request
            believed = len(rng.choice(versions)) if n % 4 == 3 else None
            try:
                opened = await reading.open_current(
                    provider, provider.default_container, key, span, size=believed
                )
            except errors.StorageVersionChanged:  # gave up after MAX_ATTEMPTS: not wrong
                refused[0] += 1
                continue
            except errors.StorageUnavailable:
                # An emulator overloaded by the race (Swift answers 503): not a wrong read
                # either; the reader backs off, and the minimum of reads bounds these.
                unavailable[0] += 1
                await asyncio.sleep(0.05)
                continue
            data = b"".join([c async for c in opened.chunks])
            if not _is_whole_version(data, opened.info.size, opened.span, by_hash, versions):
                wrong.append((opened.span, len(data)))
            reads[0] += 1
            if reads[0] >= race_reads:
                stop.set()

    async def timer() -> None:
        await asyncio.sleep(RACE_SECONDS)
        stop.set()

    tasks = [writer(n) for n in range(2)] + [reader(n) for n in range(RACE_READERS)]
    began = time.monotonic()
    async with asyncio.timeout(RACE_SECONDS + 30):
        await asyncio.gather(*tasks, _until(stop, timer()))
    rate = reads[0] / (time.monotonic() - began)
    print(
        f"{provider.location}: {reads[0]} reads ({rate:.0f}/s), {refused[0]} gave up, "
        f"{unavailable[0]} answered 503, "
        f"{len(wrong)} wrong; {written[0]} overwrites, {unwritten[0]} refused (503 or superseded)"
    )
    assert not wrong, f"{len(wrong)} wrong reads of {reads[0]}: {wrong[:5]}"
    assert reads[0] >= min_reads, f"{reads[0]} reads in {RACE_SECONDS:.0f} s"
    # Bounded: pins that always failed would refuse every read.
    assert refused[0] < reads[0] / 2, f"{refused[0]} reads gave up, {reads[0]} succeeded"
    # A race: an overwrite at least every 500 reads (measured: one every 4 to 200).
    enough = max(10, reads[0] // 500)
    assert written[0] >= enough, f"{written[0]} overwrites, {unwritten[0]} refused: no race"
    await provider.delete(provider.default_container, key)


async def _until(stop: asyncio.Event, work: Any) -> None:
    task = asyncio.ensure_future(work)
    await stop.wait()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def _span(start: int, length: int) -> reading.Span:
    return lambda size: (start, min(size - 1, start + length))


def _is_whole_version(
    data: bytes,
    size: int,
    span: tuple[int, int] | None,
    by_hash: dict[str, bytes],
    versions: list[bytes],
) -> bool:
    if span is None:
        return len(data) == size and hashlib.sha256(data).hexdigest() in by_hash
    start, end = span
    return any(len(v) == size and v[start : end + 1] == data for v in versions)
