"""Multipart parts sent concurrently (``part_concurrency``), with memory bounded by the
parts in flight, on moto behind the fault proxy: stalled part requests show how many are
in flight and how much of the source was read meanwhile."""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from stowage import errors
from stowage.storage.base import WriteOptions, exists
from stowage.storage.s3 import from_config
from tests.providers.test_s3 import PART, blocks, new_key, open_uploads, read_all
from tests.reliability.faultproxy import FaultProxy
from tests.servers.fx_s3 import S3Endpoint

OPTS = WriteOptions(content_type="application/octet-stream")
CHUNK = 64 * 1024


async def _proxy(endpoint: S3Endpoint) -> FaultProxy:
    return await FaultProxy(int(endpoint.url.rsplit(":", 1)[1])).start()


@pytest.mark.parametrize("concurrency", [1, 4])
async def test_parts_in_flight_and_memory_are_bounded(
    moto_endpoint: S3Endpoint, tmp_path: Path, concurrency: int
) -> None:
    proxy = await _proxy(moto_endpoint)
    url = f"http://127.0.0.1:{proxy.port}"
    provider = from_config(
        moto_endpoint.config(endpoint_url=url, part_size=PART, part_concurrency=concurrency),
        tmp_path,
    )
    bucket, key = moto_endpoint.bucket, new_key()
    read = [0]

    async def source() -> AsyncIterator[bytes]:
        async for chunk in blocks(16 * PART // CHUNK):  # 16 parts
            read[0] += len(chunk)
            yield chunk

    try:
        # Every part request stalls after 1 MiB: the parts in flight stay in flight.
        proxy.mode, proxy.after, proxy.direction = "stall", 1024 * 1024, "up"
        task = asyncio.create_task(provider.write(bucket, key, source(), OPTS))
        # Until the parts that may be in flight are (a busy machine took over 3 s), then a
        # second more, in which no other may start.
        deadline = time.monotonic() + 30
        while proxy.faults < concurrency and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        await asyncio.sleep(1)
        assert not task.done()
        client = moto_endpoint.client()
        try:
            assert len(open_uploads(client, bucket, key)) == 1
        finally:
            client.close()
        # Each part request in flight got its first MiB through, then stalled.
        assert proxy.faults == concurrency
        # Read meanwhile: the parts in flight and the one being filled, no more.
        assert read[0] <= (concurrency + 1) * PART + CHUNK
        assert read[0] >= concurrency * PART
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await proxy.release()
        client = moto_endpoint.client()
        try:
            assert not open_uploads(client, bucket, key)  # the whole upload was aborted
        finally:
            client.close()
        assert not await exists(provider, bucket, key)
    finally:
        await provider.close()
        await proxy.close()


async def test_concurrent_parts_assemble_in_order(
    moto_endpoint: S3Endpoint, tmp_path: Path
) -> None:
    provider = from_config(moto_endpoint.config(part_size=PART, part_concurrency=4), tmp_path)
    key, digest = new_key(), hashlib.sha256()

    async def source() -> AsyncIterator[bytes]:
        async for chunk in blocks(9 * PART // CHUNK + 3):  # nine parts and a short tenth
            digest.update(chunk)
            yield chunk

    try:
        info = await provider.write(moto_endpoint.bucket, key, source(), OPTS)
        assert info.etag.endswith("-10"), info.etag
        assert hashlib.sha256(await read_all(provider, key)).hexdigest() == digest.hexdigest()
    finally:
        await provider.close()


async def test_a_failing_part_aborts_the_whole_upload(
    moto_endpoint: S3Endpoint, tmp_path: Path
) -> None:
    """A part request reset mid-body fails the write; no part and no upload stays."""
    proxy = await _proxy(moto_endpoint)
    url = f"http://127.0.0.1:{proxy.port}"
    config = moto_endpoint.config(
        endpoint_url=url, part_size=PART, part_concurrency=4, max_attempts=1
    )
    provider = from_config(config, tmp_path)
    bucket, key = moto_endpoint.bucket, new_key()
    try:
        await provider.write(bucket, key, blocks(3), OPTS)
        old = await read_all(provider, key)
        proxy.mode, proxy.after, proxy.direction = "reset", 2 * 1024 * 1024, "up"
        with pytest.raises(errors.StorageError):
            await provider.write(bucket, key, blocks(8 * PART // CHUNK), OPTS)
        await proxy.release()
        assert await read_all(provider, key) == old
        client = moto_endpoint.client()
        try:
            assert not open_uploads(client, bucket, key)
        finally:
            client.close()
    finally:
        await provider.close()
        await proxy.close()


# "4" is not here: numeric settings take digit strings ("4" is 4).
@pytest.mark.parametrize("value", [0, 65, "four", True, 2.5])
def test_part_concurrency_is_validated(
    moto_endpoint: S3Endpoint, tmp_path: Path, value: object
) -> None:
    with pytest.raises(errors.StorageMisconfigured, match="part_concurrency"):
        from_config(moto_endpoint.config(part_concurrency=value), tmp_path)
