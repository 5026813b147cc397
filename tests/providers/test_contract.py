"""The provider contract, written once and run against every provider on its real server."""

from __future__ import annotations

import hashlib
import os
import secrets
from collections.abc import AsyncIterator

import pytest

from stowage import errors
from stowage.storage.base import Lists, Provider, WriteOptions, exists

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
