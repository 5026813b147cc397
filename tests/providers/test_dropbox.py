"""Dropbox-specific behaviour, against the HTTPS fake of ``tests/servers/dropbox_fake.py``."""

from __future__ import annotations

import asyncio
import hashlib
import os
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from stowage import errors
from stowage.storage import build_provider
from stowage.storage.base import WriteOptions
from stowage.storage.dropbox import DropboxProvider
from tests.servers.fx_dropbox import DropboxFake

OPTS = WriteOptions()
MIB = 1024 * 1024
APPEND = "files/upload_session/append_v2"


async def chunks_of(data: bytes, size: int = 64 * 1024) -> AsyncIterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


async def failing_after(data: bytes) -> AsyncIterator[bytes]:
    async for chunk in chunks_of(data):
        yield chunk
    raise errors.PayloadTooLarge("source failed mid-stream")


async def read_all(
    provider: DropboxProvider, key: str, start: int = 0, end: int | None = None
) -> bytes:
    out = bytearray()
    async for chunk in provider.open("", key, start, end):
        out += chunk
    return bytes(out)


def make(fake: DropboxFake, **overrides: Any) -> DropboxProvider:
    provider = build_provider(fake.config(**overrides), Path("."))
    assert isinstance(provider, DropboxProvider)
    return provider


def new_log(fake: DropboxFake, before: int) -> list[dict[str, Any]]:
    return fake.log()[before:]


def routes(entries: list[dict[str, Any]]) -> list[str]:
    return [e["route"] for e in entries]


@pytest.fixture
async def small_chunks(dropbox_fake: DropboxFake) -> AsyncIterator[DropboxProvider]:
    provider = make(dropbox_fake, chunk_size=MIB)
    yield provider
    await provider.close()


async def test_upload_session_above_chunk_size(
    dropbox_fake: DropboxFake, small_chunks: DropboxProvider
) -> None:
    data = os.urandom(3 * MIB + 12345)
    before = len(dropbox_fake.log())
    info = await small_chunks.write("", "big.bin", chunks_of(data), OPTS)
    log = new_log(dropbox_fake, before)
    assert routes(log) == [
        "files/upload_session/start",
        APPEND,
        APPEND,
        APPEND,
        "files/upload_session/finish",
    ]
    assert [e["offset"] for e in log[1:]] == [MIB, 2 * MIB, 3 * MIB, len(data)]
    assert info.size == len(data)
    assert info.etag == dropbox_content_hash(data)
    assert await read_all(small_chunks, "big.bin") == data


def dropbox_content_hash(data: bytes) -> str:
    block = 4 * MIB
    digests = (hashlib.sha256(data[i : i + block]).digest() for i in range(0, len(data), block))
    return hashlib.sha256(b"".join(digests)).hexdigest()


async def test_concurrent_session_writes(small_chunks: DropboxProvider) -> None:
    bodies = [os.urandom(2 * MIB + i) for i in range(4)]
    await asyncio.gather(
        *(small_chunks.write("", f"c{i}.bin", chunks_of(b), OPTS) for i, b in enumerate(bodies))
    )
    for i, body in enumerate(bodies):
        assert await read_all(small_chunks, f"c{i}.bin") == body


async def test_small_write_is_one_upload(
    dropbox_fake: DropboxFake, small_chunks: DropboxProvider
) -> None:
    before = len(dropbox_fake.log())
    await small_chunks.write("", "small.bin", chunks_of(b"x" * MIB), OPTS)
    assert routes(new_log(dropbox_fake, before)) == ["files/upload"]


async def test_failed_session_write_keeps_previous(
    dropbox_fake: DropboxFake, small_chunks: DropboxProvider
) -> None:
    await small_chunks.write("", "keep.bin", chunks_of(b"old"), OPTS)
    before = len(dropbox_fake.log())
    with pytest.raises(errors.PayloadTooLarge):
        await small_chunks.write("", "keep.bin", failing_after(os.urandom(3 * MIB)), OPTS)
    assert "files/upload_session/finish" not in routes(new_log(dropbox_fake, before))
    assert APPEND in routes(new_log(dropbox_fake, before))
    assert await read_all(small_chunks, "keep.bin") == b"old"


async def test_append_that_landed_before_a_5xx_is_not_resent(
    dropbox_fake: DropboxFake, small_chunks: DropboxProvider
) -> None:
    # The fake stores the part, then answers 500; the SDK retries and is told the
    # offset already moved past this part: the write must go on, not fail or duplicate.
    data = os.urandom(3 * MIB)
    dropbox_fake.hook("fault", {"route": APPEND, "kind": "after_commit_500"})
    before = len(dropbox_fake.log())
    await small_chunks.write("", "retried.bin", chunks_of(data), OPTS)
    appends = [e for e in new_log(dropbox_fake, before) if e["route"] == APPEND]
    assert [e["status"] for e in appends] == [500, 409, 200]
    assert appends[1]["error_summary"] == "incorrect_offset/.."
    assert await read_all(small_chunks, "retried.bin") == data


async def test_unexpected_offset_fails_and_keeps_previous(
    dropbox_fake: DropboxFake, small_chunks: DropboxProvider
) -> None:
    await small_chunks.write("", "skew.bin", chunks_of(b"previous"), OPTS)
    dropbox_fake.hook("fault", {"route": APPEND, "kind": "skew_offset"})
    with pytest.raises(errors.StorageError) as caught:
        await small_chunks.write("", "skew.bin", chunks_of(os.urandom(3 * MIB)), OPTS)
    assert "incorrect_offset" in caught.value.message
    assert await read_all(small_chunks, "skew.bin") == b"previous"


async def test_oauth_refresh_on_expired_token(dropbox_fake: DropboxFake) -> None:
    provider = make(
        dropbox_fake,
        access_token=None,
        refresh_token=dropbox_fake.refresh_token,
        app_key=dropbox_fake.app_key,
        app_secret=dropbox_fake.app_secret,
    )
    try:
        await provider.write("", "a.txt", chunks_of(b"hello"), OPTS)
        dropbox_fake.hook("expire")
        before = len(dropbox_fake.log())
        assert (await provider.stat("", "a.txt")).size == 5
        log = new_log(dropbox_fake, before)
        assert routes(log) == ["files/get_metadata", "oauth2/token", "files/get_metadata"]
        assert log[0]["status"] == 401
        assert log[0]["error_summary"] == "expired_access_token/.."
        assert log[2]["status"] == 200
    finally:
        await provider.close()


async def test_bad_refresh_token_is_access_denied(dropbox_fake: DropboxFake) -> None:
    provider = make(
        dropbox_fake, access_token=None, refresh_token="revoked", app_key=dropbox_fake.app_key
    )
    try:
        with pytest.raises(errors.StorageAccessDenied):
            await provider.stat("", "a.txt")
    finally:
        await provider.close()


async def test_invalid_token_is_access_denied(dropbox_fake: DropboxFake) -> None:
    provider = make(dropbox_fake, access_token="not-a-token")
    try:
        with pytest.raises(errors.StorageAccessDenied):
            await provider.write("", "a.txt", chunks_of(b"x"), OPTS)
    finally:
        await provider.close()


async def test_not_found_mapping(provider_dropbox: DropboxProvider) -> None:
    with pytest.raises(errors.StorageNotFound):
        await provider_dropbox.stat("", "nope.txt")
    with pytest.raises(errors.StorageNotFound):
        await read_all(provider_dropbox, "nope.txt")
    with pytest.raises(errors.StorageNotFound):
        await provider_dropbox.delete("", "nope.txt")


async def test_folder_is_not_an_object_and_is_not_deleted(
    provider_dropbox: DropboxProvider,
) -> None:
    await provider_dropbox.write("", "dir/inner.txt", chunks_of(b"in"), OPTS)
    with pytest.raises(errors.StorageNotFound):
        await provider_dropbox.stat("", "dir")
    with pytest.raises(errors.StorageNotFound):
        await read_all(provider_dropbox, "dir")
    with pytest.raises(errors.StorageNotFound):
        await provider_dropbox.delete("", "dir")
    assert await read_all(provider_dropbox, "dir/inner.txt") == b"in"


async def test_write_conflicts(provider_dropbox: DropboxProvider) -> None:
    await provider_dropbox.write("", "d/f.txt", chunks_of(b"f"), OPTS)
    with pytest.raises(errors.StorageConflict):
        await provider_dropbox.write("", "d", chunks_of(b"over a folder"), OPTS)
    with pytest.raises(errors.StorageConflict):
        await provider_dropbox.write("", "d/f.txt/under", chunks_of(b"under a file"), OPTS)


async def test_insufficient_space_is_full(
    dropbox_fake: DropboxFake, provider_dropbox: DropboxProvider
) -> None:
    dropbox_fake.hook("quota", {"bytes": 0})
    try:
        with pytest.raises(errors.StorageFull):
            await provider_dropbox.write("", "full.txt", chunks_of(b"no room"), OPTS)
    finally:
        dropbox_fake.hook("quota", {"bytes": None})


@pytest.mark.parametrize("status", [503, 429])
async def test_server_trouble_is_unavailable(dropbox_fake: DropboxFake, status: int) -> None:
    provider = make(dropbox_fake, retries=0)
    dropbox_fake.hook("fault", {"route": "files/get_metadata", "kind": "status", "status": status})
    try:
        with pytest.raises(errors.StorageUnavailable):
            await provider.stat("", "x.txt")
    finally:
        await provider.close()


async def test_untrusted_certificate_is_misconfigured(dropbox_fake: DropboxFake) -> None:
    provider = make(dropbox_fake, ca_certs=None)
    try:
        with pytest.raises(errors.StorageMisconfigured):
            await provider.stat("", "x.txt")
    finally:
        await provider.close()


async def test_ranges_and_read_past_end(provider_dropbox: DropboxProvider) -> None:
    data = bytes(range(256)) * 4
    await provider_dropbox.write("", "r.bin", chunks_of(data), OPTS)
    assert await read_all(provider_dropbox, "r.bin", 10, 19) == data[10:20]
    assert await read_all(provider_dropbox, "r.bin", 1000) == data[1000:]
    assert await read_all(provider_dropbox, "r.bin", 5000) == b""


async def test_keys_live_under_root_and_bad_keys_are_refused(dropbox_fake: DropboxFake) -> None:
    root = f"/app-{secrets.token_hex(3)}/sub/"
    provider = make(dropbox_fake, root=root)
    try:
        before = len(dropbox_fake.log())
        await provider.write("", "k.txt", chunks_of(b"k"), OPTS)
        assert provider.path("k.txt") == root.rstrip("/") + "/k.txt"
        assert [e["path"] for e in new_log(dropbox_fake, before)] == [root + "k.txt"]
        for bad in ("../x", "a//b", "./x", ""):
            with pytest.raises(errors.InvalidPath):
                await provider.stat("", bad)
    finally:
        await provider.close()


def test_bad_config_is_misconfigured(dropbox_fake: DropboxFake) -> None:
    with pytest.raises(errors.StorageMisconfigured):
        build_provider({"type": "dropbox"}, Path("."))
    with pytest.raises(errors.StorageMisconfigured):
        build_provider(dropbox_fake.config(chunk_size=200 * MIB), Path("."))


async def test_ca_certs_wins_over_ca_bundle_environment(
    dropbox_fake: DropboxFake, monkeypatch: pytest.MonkeyPatch
) -> None:
    # requests lets REQUESTS_CA_BUNDLE override a session's own bundle; the configured one must win.
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", "/nonexistent/bundle.pem")
    monkeypatch.setenv("CURL_CA_BUNDLE", "/nonexistent/bundle.pem")
    provider = make(dropbox_fake)
    try:
        await provider.write("", "env.txt", chunks_of(b"ok"), OPTS)
        assert await read_all(provider, "env.txt") == b"ok"
    finally:
        await provider.close()
