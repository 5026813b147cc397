"""Azure provider specifics, against Azurite."""

from __future__ import annotations

import asyncio
import os
import secrets
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from azure.core.exceptions import ResourceNotFoundError
from azure.storage.blob import ContainerSasPermissions, generate_container_sas
from azure.storage.blob.aio import BlobServiceClient

from stowage import errors
from stowage.storage.azure import AzureProvider, from_config
from stowage.storage.base import WriteOptions, exists, pin_of
from tests.servers.fx_azure import ACCOUNT, ACCOUNT_KEY, CONTAINER, azure_config
from tests.servers.ports import free_port

OPTS = WriteOptions(content_type="text/plain")
BLOCK = 64 * 1024


async def pieces(data: bytes, size: int) -> AsyncIterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


async def failing(data: bytes, size: int) -> AsyncIterator[bytes]:
    async for piece in pieces(data, size):
        yield piece
    raise errors.PayloadTooLarge("source failed after sending everything it had")


async def read(provider: AzureProvider, key: str, container: str = CONTAINER) -> bytes:
    out = bytearray()
    async for chunk in provider.open(container, key):
        out += chunk
    return bytes(out)


async def block_lists(endpoint: str, key: str) -> tuple[list[str], list[str]]:
    """(committed, uncommitted) block ids of a blob, straight from the server."""
    credential = {"account_name": ACCOUNT, "account_key": ACCOUNT_KEY}
    async with BlobServiceClient(endpoint, credential=credential) as service:
        blob = service.get_blob_client(CONTAINER, key)
        try:
            committed, uncommitted = await blob.get_block_list("all")
        except ResourceNotFoundError:  # not even an uncommitted block
            return [], []
    return [b.id for b in committed], [b.id for b in uncommitted]


@pytest.fixture
async def small_blocks(azure_endpoint: str, tmp_path: Path) -> AsyncIterator[AzureProvider]:
    provider = from_config(azure_config(azure_endpoint, block_size=BLOCK), tmp_path)
    yield provider
    await provider.close()


async def test_multi_block_round_trip_and_ranges(
    small_blocks: AzureProvider, azure_endpoint: str
) -> None:
    data = os.urandom(5 * BLOCK + 999)
    key = f"azure/{secrets.token_hex(6)}"
    info = await small_blocks.write(CONTAINER, key, pieces(data, 10_007), OPTS)
    assert info.size == len(data)
    assert await read(small_blocks, key) == data
    committed, uncommitted = await block_lists(azure_endpoint, key)
    assert len(committed) == 6 and uncommitted == []
    ranged = bytearray()
    async for chunk in small_blocks.open(CONTAINER, key, BLOCK - 5, 2 * BLOCK + 5):
        ranged += chunk
    assert bytes(ranged) == data[BLOCK - 5 : 2 * BLOCK + 6]


async def test_failed_upload_commits_nothing(
    small_blocks: AzureProvider, azure_endpoint: str
) -> None:
    key = f"azure/{secrets.token_hex(6)}"
    with pytest.raises(errors.PayloadTooLarge):
        await small_blocks.write(CONTAINER, key, failing(os.urandom(4 * BLOCK), 10_000), OPTS)
    assert not await exists(small_blocks, CONTAINER, key)
    committed, uncommitted = await block_lists(azure_endpoint, key)
    assert committed == []
    # Blocks staged before the failure stay, invisible, until the service drops them;
    # those still in flight were cancelled.
    assert len(uncommitted) <= 4
    # The leftovers do not get in the way of the next write.
    await small_blocks.write(CONTAINER, key, pieces(b"fresh" * 30_000, 7_000), OPTS)
    assert await read(small_blocks, key) == b"fresh" * 30_000
    assert (await block_lists(azure_endpoint, key))[1] == []


async def test_failed_overwrite_keeps_previous_blob(
    small_blocks: AzureProvider, azure_endpoint: str
) -> None:
    key = f"azure/{secrets.token_hex(6)}"
    old = os.urandom(3 * BLOCK + 5)
    await small_blocks.write(CONTAINER, key, pieces(old, 10_000), OPTS)
    before = await small_blocks.stat(CONTAINER, key)
    committed_before, _ = await block_lists(azure_endpoint, key)
    with pytest.raises(errors.PayloadTooLarge):
        await small_blocks.write(CONTAINER, key, failing(b"x" * 5 * BLOCK, 10_000), OPTS)
    assert await small_blocks.stat(CONTAINER, key) == before
    assert await read(small_blocks, key) == old
    assert (await block_lists(azure_endpoint, key))[0] == committed_before


async def test_unreachable_account_is_unavailable_fast(tmp_path: Path) -> None:
    # Default retry settings: the SDK's own would back off for over a minute.
    provider = from_config(azure_config(f"http://127.0.0.1:{free_port()}/{ACCOUNT}"), tmp_path)
    started = time.monotonic()
    try:
        with pytest.raises(errors.StorageUnavailable):
            await provider.stat(CONTAINER, "k")
    finally:
        await provider.close()
    assert time.monotonic() - started < 10


async def test_unreachable_write_and_read(tmp_path: Path) -> None:
    config = azure_config(f"http://127.0.0.1:{free_port()}/{ACCOUNT}", retries=0)
    provider = from_config(config, tmp_path)
    try:
        with pytest.raises(errors.StorageUnavailable):
            await provider.write(CONTAINER, "k", pieces(b"data", 2), OPTS)
        with pytest.raises(errors.StorageUnavailable):
            await read(provider, "k")
    finally:
        await provider.close()


async def test_wrong_key_is_access_denied(azure_endpoint: str, tmp_path: Path) -> None:
    wrong = "A" * 86 + "=="
    provider = from_config(azure_config(azure_endpoint, account_key=wrong), tmp_path)
    try:
        with pytest.raises(errors.StorageAccessDenied):
            await provider.stat(CONTAINER, "k")
        with pytest.raises(errors.StorageAccessDenied):
            await provider.write(CONTAINER, "k", pieces(b"data", 2), OPTS)
    finally:
        await provider.close()


async def test_missing_container(provider_azure: AzureProvider) -> None:
    with pytest.raises(errors.StorageMisconfigured):
        await provider_azure.write("no-such-container", "k", pieces(b"data", 2), OPTS)
    with pytest.raises(errors.StorageNotFound):
        await provider_azure.stat("no-such-container", "k")


async def test_connection_string_and_sas_token(azure_endpoint: str, tmp_path: Path) -> None:
    connection = (
        f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={ACCOUNT_KEY};"
        f"BlobEndpoint={azure_endpoint};"
    )
    sas = generate_container_sas(
        ACCOUNT,
        CONTAINER,
        account_key=ACCOUNT_KEY,
        permission=ContainerSasPermissions(read=True, write=True, delete=True),
        expiry=datetime.now(UTC) + timedelta(hours=1),
    )
    configs: list[dict[str, Any]] = [
        {"type": "azure", "container": CONTAINER, "connection_string": connection},
        {
            "type": "azure",
            "container": CONTAINER,
            "account_name": ACCOUNT,
            "endpoint_url": azure_endpoint,
            "sas_token": sas,
        },
    ]
    for config in configs:
        provider = from_config(config, tmp_path)
        key = f"azure/{secrets.token_hex(6)}"
        try:
            await provider.write(CONTAINER, key, pieces(b"hello", 2), OPTS)
            assert await read(provider, key) == b"hello"
            await provider.delete(CONTAINER, key)
        finally:
            await provider.close()


@pytest.mark.parametrize(
    "config",
    [
        {"type": "azure", "account_name": ACCOUNT},
        {"type": "azure", "container": "c"},
        {"type": "azure", "container": "c", "connection_string": "not a connection string"},
        {"type": "azure", "container": "c", "account_name": ACCOUNT, "block_size": -1},
    ],
)
def test_bad_config_is_misconfigured(config: dict[str, Any], tmp_path: Path) -> None:
    with pytest.raises(errors.StorageMisconfigured):
        from_config(config, tmp_path)


async def test_range_past_the_end(provider_azure: AzureProvider) -> None:
    key = f"azure/{secrets.token_hex(6)}"
    await provider_azure.write(CONTAINER, key, pieces(b"0123456789", 4), OPTS)
    with pytest.raises(errors.RangeNotSatisfiable):
        async for _ in provider_azure.open(CONTAINER, key, 50):
            pass
    await provider_azure.delete(CONTAINER, key)


async def test_cancelled_write_commits_nothing(small_blocks: AzureProvider) -> None:
    key = f"azure/{secrets.token_hex(6)}"
    reached = asyncio.Event()

    async def stalls() -> AsyncIterator[bytes]:
        for _ in range(3):
            yield os.urandom(BLOCK)
        reached.set()
        await asyncio.Event().wait()
        yield b""  # never reached

    task = asyncio.create_task(small_blocks.write(CONTAINER, key, stalls(), OPTS))
    await reached.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not await exists(small_blocks, CONTAINER, key)


async def test_a_long_pinned_read_overtaken_by_an_overwrite_stops_never_mixes(
    provider_azure: AzureProvider,
) -> None:
    # Azure reads in 4 MiB GETs: every one after the first must keep to the same version.
    key = f"pinned-{secrets.token_hex(4)}.bin"
    old, new = os.urandom(10 * 1024 * 1024), os.urandom(10 * 1024 * 1024)
    await provider_azure.write(CONTAINER, key, pieces(old, 1024 * 1024), OPTS)
    info = await provider_azure.stat(CONTAINER, key)
    chunks = provider_azure.open(CONTAINER, key, version=pin_of(info))
    got = bytearray(await anext(chunks))
    assert 0 < len(got) < len(old)
    await provider_azure.write(CONTAINER, key, pieces(new, 1024 * 1024), OPTS)
    with pytest.raises(errors.StorageVersionChanged):
        async for chunk in chunks:
            got += chunk
    assert old.startswith(bytes(got))  # what came before the refusal was the old version's
    await provider_azure.delete(CONTAINER, key)
