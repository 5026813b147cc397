"""Async stream stages: base64 decoding, size limit, peek, idle timeout, digest."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import threading
import time
from collections.abc import AsyncIterator, Coroutine, Iterable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stowage import errors
from stowage.core import streams

T = TypeVar("T")


async def chunks_of(parts: Iterable[bytes]) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


async def collect(chunks: AsyncIterator[bytes]) -> bytes:
    return b"".join([c async for c in chunks])


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(c, len(data)) for c in cuts})
    pieces, last = [], 0
    for p in points:
        pieces.append(data[last:p])
        last = p
    pieces.append(data[last:])
    return pieces


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Drive a coroutine that never waits on the loop (fast for property tests)."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
    coro.close()
    raise AssertionError("the coroutine waited for something")


# --- base64 -------------------------------------------------------------------------------


@given(data=st.binary(max_size=600), cuts=st.lists(st.integers(0, 900), max_size=12))
@settings(max_examples=200, deadline=None)
def test_base64_across_any_chunk_split_equals_b64decode(data: bytes, cuts: list[int]) -> None:
    encoded = base64.b64encode(data)
    pieces = split_at(encoded, cuts)
    assert b"".join(pieces) == encoded
    assert run(collect(streams.base64_decoded(chunks_of(pieces)))) == base64.b64decode(encoded)


@given(data=st.binary(max_size=400), cuts=st.lists(st.integers(0, 600), max_size=8))
@settings(max_examples=150, deadline=None)
def test_urlsafe_unpadded_base64_across_splits(data: bytes, cuts: list[int]) -> None:
    encoded = base64.urlsafe_b64encode(data).rstrip(b"=")
    pieces = split_at(encoded, cuts)
    assert run(collect(streams.base64_decoded(chunks_of(pieces)))) == data


@given(
    data=st.binary(max_size=300),
    spaces=st.lists(st.tuples(st.integers(0, 500), st.sampled_from([b" ", b"\n", b"\r\n", b"\t"]))),
    cuts=st.lists(st.integers(0, 600), max_size=8),
)
@settings(max_examples=150, deadline=None)
def test_whitespace_anywhere_is_ignored(
    data: bytes, spaces: list[tuple[int, bytes]], cuts: list[int]
) -> None:
    encoded = bytearray(base64.b64encode(data))
    for at, space in sorted(spaces, reverse=True):
        encoded[min(at, len(encoded)) : min(at, len(encoded))] = space
    pieces = split_at(bytes(encoded), cuts)
    assert run(collect(streams.base64_decoded(chunks_of(pieces)))) == data


def test_both_alphabets_decode_the_same_bytes() -> None:
    data = bytes(range(256)) * 3
    std, url = base64.b64encode(data), base64.urlsafe_b64encode(data)
    assert b"+" in std and b"/" in std and b"-" in url and b"_" in url
    for encoded in (std, url, std.rstrip(b"="), url.rstrip(b"=")):
        assert run(collect(streams.base64_decoded(chunks_of([encoded])))) == data


async def test_base64_mime_style_line_breaks() -> None:
    data = bytes(range(256)) * 4
    encoded = base64.encodebytes(data)  # 76-character lines
    assert b"\n" in encoded
    parts = [encoded[i : i + 7] for i in range(0, len(encoded), 7)]
    assert await collect(streams.base64_decoded(chunks_of(parts))) == data


async def test_empty_base64_is_empty() -> None:
    assert await collect(streams.base64_decoded(chunks_of([]))) == b""
    assert await collect(streams.base64_decoded(chunks_of([b"", b"  \n"]))) == b""


@pytest.mark.parametrize(
    "encoded",
    [
        b"!!!!",
        b"QUJD*",
        b"Q",
        b"QUJDR",
        b"QQ===",
        b"=QQ=",
        b"QQ==QUJD",
        b"QUJ\x00",
        b"QUJD\xff\xfe",
        "QUJDé".encode(),
        b"QU.D",
    ],
)
async def test_invalid_base64_raises_invalid_base64(encoded: bytes) -> None:
    with pytest.raises(errors.InvalidBase64):
        await collect(streams.base64_decoded(chunks_of([encoded])))
    with pytest.raises(errors.InvalidBase64):
        await collect(streams.base64_decoded(chunks_of([bytes([b]) for b in encoded])))


b64_junk = st.lists(
    st.sampled_from([b"Q", b"U", b"J", b"D", b"=", b"==", b"-", b"/", b" ", b"\n", b"*", b"\xff"]),
    max_size=20,
).map(b"".join)


@given(st.binary(max_size=200) | b64_junk, st.lists(st.integers(0, 300), max_size=6))
@settings(max_examples=300, deadline=None)
def test_base64_result_does_not_depend_on_the_split(junk: bytes, cuts: list[int]) -> None:
    """Valid or not, the outcome is the same however the body was cut into chunks."""

    def outcome(parts: list[bytes]) -> bytes | None:
        try:
            return run(collect(streams.base64_decoded(chunks_of(parts))))
        except errors.InvalidBase64:
            return None

    whole = outcome([junk])
    assert outcome(split_at(junk, cuts)) == whole
    assert outcome([bytes([b]) for b in junk]) == whole
    if whole is not None:
        compact = b"".join(junk.split()).translate(bytes.maketrans(b"-_", b"+/"))
        assert whole == base64.b64decode(compact + b"=" * (-len(compact) % 4))


@pytest.mark.parametrize(
    "parts", [[b"QQ==", b"QUJD"], [b"QQ=", b"=QQ"], [b"QQ==", b"\n", b"QQ=="], [b"QQ==QQ"]]
)
async def test_data_after_padding_is_invalid_in_any_split(parts: list[bytes]) -> None:
    with pytest.raises(errors.InvalidBase64):
        await collect(streams.base64_decoded(chunks_of(parts)))


async def test_padding_then_only_whitespace_is_fine() -> None:
    parts = [b"QQ==", b"\r\n", b"  "]
    assert await collect(streams.base64_decoded(chunks_of(parts))) == b"A"


# --- limited ------------------------------------------------------------------------------


@pytest.mark.parametrize("parts", [[b"x" * 10], [b"x"] * 10, [b"xxx", b"", b"xxxxxxx"]])
async def test_limited_passes_exactly_max(parts: list[bytes]) -> None:
    out = await collect(streams.limited(chunks_of(parts), 10, "too big"))
    assert out == b"x" * 10


@pytest.mark.parametrize("parts", [[b"x" * 11], [b"x"] * 11, [b"xxxxxxxxxx", b"x"]])
async def test_limited_raises_at_max_plus_one(parts: list[bytes]) -> None:
    seen = b""
    with pytest.raises(errors.PayloadTooLarge) as info:
        async for chunk in streams.limited(chunks_of(parts), 10, "too big"):
            seen += chunk
    assert info.value.message == "too big"
    assert info.value.details == {"limit": 10}
    assert len(seen) <= 10


async def test_limited_zero_allows_only_empty() -> None:
    assert await collect(streams.limited(chunks_of([b"", b""]), 0, "m")) == b""
    with pytest.raises(errors.PayloadTooLarge):
        await collect(streams.limited(chunks_of([b"a"]), 0, "m"))


async def test_limited_stops_reading_an_endless_source() -> None:
    pulled = 0

    async def endless() -> AsyncIterator[bytes]:
        nonlocal pulled
        while True:
            pulled += 1
            yield b"x" * 1000

    with pytest.raises(errors.PayloadTooLarge):
        await collect(streams.limited(endless(), 10_000, "m"))
    assert pulled == 11


# --- peek ---------------------------------------------------------------------------------


@given(
    parts=st.lists(st.binary(max_size=50), max_size=10),
    want=st.integers(0, 300),
)
@settings(max_examples=200, deadline=None)
def test_peek_returns_the_head_and_replays_everything(parts: list[bytes], want: int) -> None:
    async def scenario() -> tuple[bytes, bytes]:
        head, rest = await streams.peek(chunks_of(parts), want)
        return head, await collect(rest)

    head, replayed = run(scenario())
    whole = b"".join(parts)
    assert head == whole[:want]
    assert replayed == whole


async def test_peek_reads_no_more_than_needed() -> None:
    pulled: list[int] = []

    async def source() -> AsyncIterator[bytes]:
        for i in range(10):
            pulled.append(i)
            yield bytes([i]) * 100

    head, rest = await streams.peek(source(), 150)
    assert head == b"\x00" * 100 + b"\x01" * 50
    assert pulled == [0, 1]
    assert len(await collect(rest)) == 1000


# --- idle timeout -------------------------------------------------------------------------


async def test_idle_timeout_raises_request_timeout_on_a_stall() -> None:
    async def stalls() -> AsyncIterator[bytes]:
        yield b"first"
        await asyncio.sleep(10)
        yield b"never"

    got: list[bytes] = []
    with pytest.raises(errors.RequestTimeout):
        async for chunk in streams.idle_timeout(stalls(), 0.1):
            got.append(chunk)
    assert got == [b"first"]


async def test_idle_timeout_is_per_chunk_not_total() -> None:
    async def steady() -> AsyncIterator[bytes]:
        for _ in range(6):
            await asyncio.sleep(0.05)
            yield b"x"

    # 0.3 s in total, but never 0.15 s between two chunks.
    assert await collect(streams.idle_timeout(steady(), 0.15)) == b"x" * 6


async def test_idle_timeout_passes_everything_through() -> None:
    assert await collect(streams.idle_timeout(chunks_of([b"a", b"", b"bc"]), 1)) == b"abc"


async def test_idle_timeout_lets_source_errors_through() -> None:
    async def broken() -> AsyncIterator[bytes]:
        yield b"a"
        raise errors.InvalidBase64()

    with pytest.raises(errors.InvalidBase64):
        await collect(streams.idle_timeout(broken(), 1))


async def test_idle_timeout_does_not_count_time_spent_downstream() -> None:
    """Only waits for the next chunk count: a slow consumer (a disk write) is no stall."""
    got = []
    async for chunk in streams.idle_timeout(chunks_of([b"a", b"b", b"c"]), 0.1):
        got.append(chunk)
        await asyncio.sleep(0.25)
    assert got == [b"a", b"b", b"c"]


async def test_idle_timeout_fires_after_a_slow_consumer_and_a_stall() -> None:
    async def stalls_later() -> AsyncIterator[bytes]:
        yield b"a"
        await asyncio.sleep(10)
        yield b"never"

    started = asyncio.get_running_loop().time()
    with pytest.raises(errors.RequestTimeout):
        async for _ in streams.idle_timeout(stalls_later(), 0.1):
            await asyncio.sleep(0.25)
    assert asyncio.get_running_loop().time() - started < 1


async def test_idle_timeout_leaves_an_outside_cancellation_a_cancellation() -> None:
    async def stalls() -> AsyncIterator[bytes]:
        yield b"a"
        await asyncio.sleep(10)
        yield b"never"

    task = asyncio.create_task(collect(streams.idle_timeout(stalls(), 5)))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_idle_timeout_leaves_no_timer_behind() -> None:
    loop = asyncio.get_running_loop()
    before = len(loop._scheduled)  # type: ignore[attr-defined]
    assert await collect(streams.idle_timeout(chunks_of([b"a"] * 100), 30)) == b"a" * 100
    assert len([h for h in loop._scheduled if not h.cancelled()]) <= before  # type: ignore[attr-defined]


# --- digest -------------------------------------------------------------------------


@given(st.lists(st.binary(max_size=100), max_size=10))
@settings(max_examples=100, deadline=None)
def test_digest_counts_and_hashes(parts: list[bytes]) -> None:
    digest = streams.Digest()
    out = run(collect(digest.tap(chunks_of(parts))))
    whole = b"".join(parts)
    assert out == whole
    assert digest.size == len(whole)
    assert digest.sha256 == hashlib.sha256(whole).hexdigest()


# --- then ---------------------------------------------------------------------------------


async def test_then_runs_before_the_consumer_sees_the_end() -> None:
    """A provider commits when the source ends: ``at_end`` must already have run."""
    calls: list[str] = []

    async def at_end() -> None:
        calls.append("at_end")

    stream = streams.then(chunks_of([b"a", b"b"]), at_end)
    assert [await anext(stream), await anext(stream)] == [b"a", b"b"]
    assert calls == []
    with pytest.raises(StopAsyncIteration):
        await anext(stream)
    assert calls == ["at_end"]


async def test_then_raises_into_the_consumer_instead_of_ending() -> None:
    async def refuse() -> None:
        raise errors.Conflict("no")

    with pytest.raises(errors.Conflict):
        await collect(streams.then(chunks_of([b"a"]), refuse))


async def test_file_chunks_reads_a_file_whole_in_chunks(tmp_path: Path) -> None:
    data = os.urandom(1000)
    (tmp_path / "f").write_bytes(data)
    got = [chunk async for chunk in streams.file_chunks(tmp_path / "f", 300)]
    assert [len(c) for c in got] == [300, 300, 300, 100] and b"".join(got) == data


async def test_file_chunks_waits_for_the_disk_off_the_event_loop(tmp_path: Path) -> None:
    """A FIFO stands for a slow disk: its open and reads block until a writer comes, here
    0.3 s later. Read on the loop, they froze every other request (and these ticks)."""
    fifo = tmp_path / "slow"
    os.mkfifo(fifo)

    def write_later() -> None:
        time.sleep(0.3)
        with open(fifo, "wb") as writer:
            writer.write(b"0123456789")

    threading.Thread(target=write_later, daemon=True).start()
    reading = asyncio.ensure_future(_joined(streams.file_chunks(fifo, 4)))
    ticks = 0
    while not reading.done():
        await asyncio.sleep(0.005)
        ticks += 1
    assert reading.result() == b"0123456789"
    assert ticks >= 20, ticks  # the loop went on while the read waited


async def _joined(chunks: AsyncIterator[bytes]) -> bytes:
    return b"".join([chunk async for chunk in chunks])
