"""Fixtures of tests/webhooks; the helpers they use are in receiver.py."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from stowage.config import Settings
from tests.api.harness import Harness, harness  # noqa: F401  (fixture reused here)
from tests.webhooks.receiver import (
    Receiver,
    source_file,
)


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    rec = Receiver()
    app = web.Application()
    app.router.add_post("/hook", rec.handle)
    app.router.add_get("/file.txt", source_file)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    rec.url = f"http://127.0.0.1:{port}/hook"
    try:
        yield rec
    finally:
        await runner.cleanup()


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(
        data_dir=tmp_path / "data",
        fetch_allow_private=True,
        access_log=False,
        webhook_allow_private=True,
        webhook_retry_base_delay=0.3,
        webhook_timeout=2.0,
        webhook_poll_interval=0.2,
    )
