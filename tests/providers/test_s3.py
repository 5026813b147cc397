"""S3-specific behaviour beyond the contract: ACLs, multipart, abort on failure, error mapping."""

from __future__ import annotations

import asyncio
import hashlib
import os
import secrets
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from stowage import errors
from stowage.storage import build_provider
from stowage.storage.base import WriteOptions, exists
from stowage.storage.s3 import MIB, S3Provider, from_config
from tests.servers.fx_s3 import (
    PROVIDER_FIXTURES,
    S3Endpoint,
    make_bucket,
    start_moto,
    stop,
)
from tests.servers.ports import free_port

OPTS = WriteOptions()
PART = 5 * MIB


@pytest.fixture(params=[name.removeprefix("s3_") for name in PROVIDER_FIXTURES])
def endpoint(request: pytest.FixtureRequest) -> S3Endpoint:
    found: S3Endpoint = request.getfixturevalue(f"{request.param}_endpoint")
    return found


@pytest.fixture
async def plain(endpoint: S3Endpoint, tmp_path: Path) -> AsyncIterator[S3Provider]:
    provider = from_config(endpoint.config(), tmp_path)
    yield provider
    await provider.close()


@pytest.fixture
async def small_parts(endpoint: S3Endpoint, tmp_path: Path) -> AsyncIterator[S3Provider]:
    provider = from_config(endpoint.config(part_size=PART), tmp_path)
    yield provider
    await provider.close()


@pytest.fixture
def s3(endpoint: S3Endpoint) -> Iterator[Any]:
    client = endpoint.client()
    yield client
    client.close()


async def blocks(count: int, size: int = 64 * 1024, seed: bytes = b"") -> AsyncIterator[bytes]:
    base = os.urandom(size)
    for i in range(count):
        yield seed + i.to_bytes(8, "big") + base[8 + len(seed) :]


async def then_fail(source: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    async for chunk in source:
        yield chunk
    raise errors.PayloadTooLarge("source failed mid-stream")


async def read_all(provider: S3Provider, key: str, start: int = 0, end: int | None = None) -> bytes:
    out = bytearray()
    async for chunk in provider.open(provider.default_container, key, start, end):
        out += chunk
    return bytes(out)


def new_key(name: str = "obj.bin") -> str:
    return f"s3/{secrets.token_hex(6)}/{name}"


def open_uploads(s3: Any, bucket: str, key: str) -> list[Any]:
    uploads: list[Any] = s3.list_multipart_uploads(Bucket=bucket, Prefix=key).get("Uploads", [])
    return uploads


async def test_build_provider_from_app_config(endpoint: S3Endpoint, tmp_path: Path) -> None:
    provider = build_provider(endpoint.config(), tmp_path)
    try:
        assert isinstance(provider, S3Provider)
        assert provider.location == "S3"
        assert provider.default_container == endpoint.bucket
    finally:
        await provider.close()


async def test_content_type_is_stored(plain: S3Provider, s3: Any) -> None:
    key = new_key("page.html")
    opts = WriteOptions(content_type="text/html; charset=utf-8")
    await plain.write(plain.default_container, key, blocks(2), opts)
    head = s3.head_object(Bucket=plain.default_container, Key=key)
    assert head["ContentType"] == "text/html; charset=utf-8"


def _public_read(s3: Any, bucket: str, key: str) -> bool:
    try:
        grants = s3.get_object_acl(Bucket=bucket, Key=key)["Grants"]
    except ClientError as exc:
        # moto 5.2.5 keeps no ACL at all for a multipart object created without one (the
        # provider sends none for private writes) and answers GetObjectAcl with a 500.
        if exc.response["ResponseMetadata"]["HTTPStatusCode"] != 500:
            raise
        return False
    return any(
        g["Grantee"].get("URI", "").endswith("/global/AllUsers") and g["Permission"] == "READ"
        for g in grants
    )


@pytest.mark.parametrize("count", [2, 100], ids=["single-put", "multipart"])
async def test_public_acl(moto_endpoint: S3Endpoint, tmp_path: Path, count: int) -> None:
    provider = from_config(moto_endpoint.config(part_size=PART), tmp_path)
    s3 = moto_endpoint.client()
    bucket, key = provider.default_container, new_key()
    try:
        await provider.write(bucket, key, blocks(count), WriteOptions(access="public"))
        assert _public_read(s3, bucket, key)
        # Overwriting privately drops the public grant: the ACL belongs to each write.
        await provider.write(bucket, key, blocks(count), OPTS)
        assert not _public_read(s3, bucket, key)
    finally:
        s3.close()
        await provider.close()


async def test_multipart_round_trip(small_parts: S3Provider, s3: Any) -> None:
    key = new_key()
    digest = hashlib.sha256()

    async def source() -> AsyncIterator[bytes]:
        async for chunk in blocks(180):  # 11.25 MiB: two full 5 MiB parts and a short one
            digest.update(chunk)
            yield chunk

    info = await small_parts.write(small_parts.default_container, key, source(), OPTS)
    assert info.size == 180 * 64 * 1024
    assert info.etag.endswith("-3"), info.etag  # S3's multipart ETag names the part count
    check = hashlib.sha256()
    async for chunk in small_parts.open(small_parts.default_container, key):
        check.update(chunk)
    assert check.hexdigest() == digest.hexdigest()
    stat = await small_parts.stat(small_parts.default_container, key)
    assert (stat.size, stat.etag) == (info.size, info.etag)
    assert not open_uploads(s3, small_parts.default_container, key)


async def test_exact_part_multiple_and_oversized_chunks(small_parts: S3Provider) -> None:
    key = new_key()
    # Two chunks of 1.5 parts each: exactly three parts, none of them empty.
    chunk = os.urandom(PART + PART // 2)

    async def source() -> AsyncIterator[bytes]:
        yield chunk
        yield chunk

    info = await small_parts.write(small_parts.default_container, key, source(), OPTS)
    assert info.size == 2 * len(chunk)
    assert info.etag.endswith("-3"), info.etag
    assert await read_all(small_parts, key, len(chunk) - 3, len(chunk) + 2) == (
        chunk[-3:] + chunk[:3]
    )


async def test_failed_multipart_keeps_old_object_and_aborts(
    small_parts: S3Provider, s3: Any
) -> None:
    bucket, key = small_parts.default_container, new_key()
    await small_parts.write(bucket, key, blocks(3, seed=b"old"), OPTS)
    old = await read_all(small_parts, key)
    with pytest.raises(errors.PayloadTooLarge):
        await small_parts.write(bucket, key, then_fail(blocks(130)), OPTS)  # > 8 MiB sent
    assert await read_all(small_parts, key) == old
    assert not open_uploads(s3, bucket, key)


async def test_failed_first_multipart_leaves_nothing(small_parts: S3Provider, s3: Any) -> None:
    bucket, key = small_parts.default_container, new_key()
    with pytest.raises(errors.PayloadTooLarge):
        await small_parts.write(bucket, key, then_fail(blocks(100)), OPTS)
    assert not await exists(small_parts, bucket, key)
    assert not open_uploads(s3, bucket, key)


async def test_too_many_parts_is_refused_and_aborted(
    small_parts: S3Provider, s3: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("stowage.storage.s3.MAX_PARTS", 2)
    bucket, key = small_parts.default_container, new_key()
    with pytest.raises(errors.PayloadTooLarge):
        await small_parts.write(bucket, key, blocks(200), OPTS)  # 12.5 MiB: three parts
    assert not await exists(small_parts, bucket, key)
    assert not open_uploads(s3, bucket, key)


async def test_cancelled_multipart_aborts(small_parts: S3Provider, s3: Any) -> None:
    bucket, key = small_parts.default_container, new_key()
    stalled = asyncio.Event()

    async def stalls() -> AsyncIterator[bytes]:
        async for chunk in blocks(100):
            yield chunk
        stalled.set()
        await asyncio.Event().wait()  # a client that stops sending
        yield b""

    task = asyncio.create_task(small_parts.write(bucket, key, stalls(), OPTS))
    await asyncio.wait_for(stalled.wait(), 30)
    assert open_uploads(s3, bucket, key)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not open_uploads(s3, bucket, key)
    assert not await exists(small_parts, bucket, key)


async def test_range_past_end(plain: S3Provider) -> None:
    key = new_key()
    await plain.write(plain.default_container, key, blocks(1, 100), OPTS)
    assert len(await read_all(plain, key, 90, 500)) == 10
    with pytest.raises(errors.RangeNotSatisfiable):
        await read_all(plain, key, 100)
    assert await read_all(plain, key, 5, 4) == b""


async def test_open_readers_do_not_stall_other_requests(plain: S3Provider) -> None:
    bucket, key = plain.default_container, new_key()
    await plain.write(bucket, key, blocks(64), OPTS)  # 4 MiB: each reader holds a connection
    readers = [plain.open(bucket, key) for _ in range(24)]
    try:
        for reader in readers:
            await asyncio.wait_for(anext(reader), 10)
        info = await asyncio.wait_for(plain.stat(bucket, key), 10)
        assert info.size == 64 * 64 * 1024
    finally:
        for reader in readers:
            await reader.aclose()  # type: ignore[attr-defined]


async def test_missing_bucket(endpoint: S3Endpoint, tmp_path: Path) -> None:
    provider = from_config(endpoint.config(bucket=f"nobucket-{secrets.token_hex(4)}"), tmp_path)
    bucket = provider.default_container
    try:
        with pytest.raises(errors.StorageMisconfigured):
            await provider.write(bucket, "k", blocks(1), OPTS)
        with pytest.raises(errors.StorageNotFound):
            await provider.stat(bucket, "k")
        with pytest.raises(errors.StorageNotFound):
            await read_all(provider, "k")
        with pytest.raises(errors.StorageNotFound):
            await provider.delete(bucket, "k")
    finally:
        await provider.close()


async def _all_unavailable(provider: S3Provider, limit: float) -> None:
    bucket = provider.default_container
    calls: list[Callable[[], Awaitable[Any]]] = [
        lambda: provider.stat(bucket, "k"),
        lambda: read_all(provider, "k"),
        lambda: provider.write(bucket, "k", blocks(2), OPTS),
        lambda: provider.delete(bucket, "k"),
    ]
    for call in calls:
        started = time.monotonic()
        with pytest.raises(errors.StorageUnavailable):
            await asyncio.wait_for(call(), 30)
        assert time.monotonic() - started < limit


async def test_unreachable_endpoint_fails_fast(tmp_path: Path) -> None:
    dead = S3Endpoint(f"http://127.0.0.1:{free_port()}", "k", "s")
    provider = from_config(dead.config(), tmp_path)
    try:
        await _all_unavailable(provider, 5)
    finally:
        await provider.close()


async def test_stopped_server(tmp_path: Path) -> None:
    proc, port = start_moto(tmp_path / "moto.log")
    endpoint = S3Endpoint(f"http://127.0.0.1:{port}", "testing", "testing")
    provider = from_config(endpoint.config(), tmp_path)
    try:
        make_bucket(endpoint)
        await provider.write(endpoint.bucket, "k", blocks(2), OPTS)
        stop(proc)
        await _all_unavailable(provider, 5)
    finally:
        stop(proc)
        await provider.close()


async def test_server_dies_mid_read(tmp_path: Path) -> None:
    proc, port = start_moto(tmp_path / "moto.log")
    endpoint = S3Endpoint(f"http://127.0.0.1:{port}", "testing", "testing")
    provider = from_config(endpoint.config(), tmp_path)
    try:
        make_bucket(endpoint)
        await provider.write(endpoint.bucket, "k", blocks(64 * 16), OPTS)  # 64 MiB
        reader = provider.open(endpoint.bucket, "k")
        await anext(reader)
        stop(proc)
        with pytest.raises(errors.StorageUnavailable):
            async for _ in reader:
                pass
    finally:
        stop(proc)
        await provider.close()


async def test_silent_endpoint_times_out(tmp_path: Path) -> None:
    # Accepts connections (the kernel does) but never answers.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        config = S3Endpoint(url, "k", "s").config(read_timeout=0.5, connect_timeout=0.5)
        provider = from_config(config, tmp_path)
        try:
            with pytest.raises(errors.StorageUnavailable):
                await asyncio.wait_for(provider.stat(provider.default_container, "k"), 30)
        finally:
            await provider.close()


@pytest.mark.parametrize(
    "change",
    [
        {"bucket": None},
        {"bucket": ""},
        {"secret_access_key": None},
        {"part_size": 1024},
        {"part_size": "8 parsecs"},
        {"addressing_style": "sideways"},
        {"endpoint_url": "127.0.0.1:9000"},
        {"endpoint": "http://127.0.0.1:9000"},
        {"read_timeout": 0},
    ],
    ids=repr,
)
def test_config_is_validated(change: dict[str, Any], tmp_path: Path) -> None:
    config = S3Endpoint("http://127.0.0.1:1", "k", "s").config(**change)
    config = {k: v for k, v in config.items() if v is not None}
    with pytest.raises(errors.StorageMisconfigured):
        from_config(config, tmp_path)


def test_config_without_credentials_uses_default_chain(tmp_path: Path) -> None:
    config = S3Endpoint("http://127.0.0.1:1", "k", "s").config()
    del config["access_key_id"], config["secret_access_key"]
    assert from_config(config, tmp_path).default_container == config["bucket"]


if "s3_swift" in PROVIDER_FIXTURES:

    async def test_wrong_secret_is_refused(swift_endpoint: S3Endpoint, tmp_path: Path) -> None:
        # Swift checks signatures (moto does not): a bad secret is a configuration error.
        config = swift_endpoint.config(secret_access_key="not-the-secret")
        provider = from_config(config, tmp_path)
        try:
            with pytest.raises(errors.StorageMisconfigured, match="SignatureDoesNotMatch"):
                await provider.write(provider.default_container, new_key(), blocks(1), OPTS)
            # HEAD answers carry no error code: a bare 403 is all that can be said.
            with pytest.raises(errors.StorageAccessDenied):
                await provider.stat(provider.default_container, "k")
        finally:
            await provider.close()
