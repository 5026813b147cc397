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
