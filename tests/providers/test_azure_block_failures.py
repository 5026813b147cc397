"""Several Azure blocks failing at once: the write fails with one error and every block's
error is read, so none is left to be logged when its task is collected (3.11 formats that
log's traceback by parsing source, which may run inside another parse and break it)."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from stowage import errors
from stowage.storage import azure
from stowage.storage.azure import from_config
from stowage.storage.base import WriteOptions
from tests.reliability.faultproxy import FaultProxy
from tests.servers.fx_azure import ACCOUNT, CONTAINER, azure_config

BLOCK = 64 * 1024


def _port(endpoint: str) -> int:
    return int(endpoint.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])


async def _blocks(count: int) -> AsyncIterator[bytes]:
    for index in range(count):
        yield bytes([index]) * BLOCK


@pytest.mark.parametrize("concurrency", [4, 8])
async def test_every_failed_block_is_read(
    azure_endpoint: str, tmp_path: Path, concurrency: int
) -> None:
    unread: list[dict[str, Any]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _loop, context: unread.append(context))
    async with FaultProxy(_port(azure_endpoint)) as proxy:
        config = azure_config(
            f"{proxy.url}/{ACCOUNT}",
            block_size=BLOCK,
            concurrency=concurrency,
            retries=0,
            timeout=5,
        )
        provider = from_config(config, tmp_path)
        proxy.mode = "down"  # every block's request is refused at once
        try:
            with pytest.raises(errors.StorageError):
                await provider.write(
                    CONTAINER, "many-fail.bin", _blocks(concurrency + 1), WriteOptions()
                )
        finally:
            await provider.close()
    assert proxy.faults >= 2, "fewer than two blocks failed: the test proved nothing"
    for _ in range(3):
        await asyncio.sleep(0)
        gc.collect()
    loop.set_exception_handler(None)
    assert [c.get("message") for c in unread] == []


async def test_a_service_that_stops_taking_a_block_fails_the_write(
    azure_endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """aiohttp times out reading the answer only once the body is sent: a service that
    stops taking bytes mid-block would hold the write forever, were the block not given
    up after ``read_timeout`` plus its size at ``WRITE_MIN_RATE`` (made fast here)."""
    monkeypatch.setattr(azure, "WRITE_MIN_RATE", 64 * 1024 * 1024)  # 32 MiB: half a second
    size = 32 * 1024 * 1024  # more than the kernel's socket buffers take on loopback
    async with FaultProxy(_port(azure_endpoint)) as proxy:
        config = azure_config(
            f"{proxy.url}/{ACCOUNT}", block_size=size, retries=0, timeout=1, read_timeout=1
        )
        provider = from_config(config, tmp_path)
        proxy.mode, proxy.after, proxy.direction = "stall", 1024 * 1024, "up"
        started = asyncio.get_running_loop().time()
        try:
            with pytest.raises(errors.StorageUnavailable):
                async with asyncio.timeout(60):
                    await provider.write(CONTAINER, "stalled.bin", _big(size), WriteOptions())
        finally:
            await proxy.release()
            await provider.close()
    assert proxy.faults >= 1, "the stall never happened: the test proved nothing"
    assert asyncio.get_running_loop().time() - started < 30


async def _big(size: int) -> AsyncIterator[bytes]:
    for _ in range(size // BLOCK):
        yield b"x" * BLOCK
