"""An app whose storage configuration cannot be used: the node starts, reports it and
skips it; a request for that storage is answered 503 STORAGE_MISCONFIGURED; the app's
other storage and every other app keep working. (``apps create/update`` refuse such a
configuration, tests/test_cli.py; a row may still hold one written before that check, or
by hand.)"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from stowage.assembly import assemble
from stowage.config import Settings
from stowage.http.app import api_app
from stowage.registry import build_registry
from stowage.registry.base import App

RACKSPACE = {
    "type": "rackspace",
    "identity_url": "http://127.0.0.1:1/v2.0",
    "username": "u",
    "api_key": "k",
    "container": "c",
    "segment_size": "a lot",
}
GCS = {
    "type": "gcs",
    "bucket": "b",
    "anonymous": True,
    "chunk_size": "8MB",
}  # not a multiple of 256 KiB
BROKEN = App(
    api_key="brokenappkey00000001", secret="s", storage={"rackspace": RACKSPACE, "gcs": GCS}
)
FINE = App(api_key="fineappkey0000000001", secret="s")


async def _rows(settings: Settings) -> None:
    registry = build_registry(settings)
    await registry.open()
    try:
        await registry.create_app(BROKEN)
        await registry.create_app(FINE)
    finally:
        await registry.close()


async def _store(client: TestClient[Any, Any], app: App, provider: str) -> Any:
    resp = await client.post(f"/api/store/{provider}", params={"key": app.api_key}, data=b"x")
    return resp.status, await resp.json()


@pytest.mark.parametrize("provider, field", [("rackspace", "segment_size"), ("gcs", "chunk_size")])
async def test_misconfigured_storage_is_skipped_at_start_and_503_on_use(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, provider: str, field: str
) -> None:
    settings = Settings(data_dir=tmp_path / "data", access_log=False)
    await _rows(settings)
    parts = assemble(settings)
    with caplog.at_level(logging.WARNING, logger="stowage.core"):
        await parts.start()  # start-up recovery builds every app's providers
    reported = [r.getMessage() for r in caplog.records if BROKEN.api_key in r.getMessage()]
    assert any(provider in m and field in m for m in reported), reported
    client = TestClient(TestServer(api_app(parts)))
    await client.start_server()
    try:
        status, body = await _store(client, BROKEN, provider)
        assert status == 503, body
        assert body["error"]["code"] == "STORAGE_MISCONFIGURED"
        assert field in body["error"]["message"]
        assert body["error"]["details"] == {"field": field}
        assert "k" not in body["error"]["message"].split()  # the api_key is not quoted
        for app in (BROKEN, FINE):  # the same app's default storage, and another app
            status, body = await _store(client, app, "S3")
            assert status == 200, body
    finally:
        await client.close()
        await parts.close()
