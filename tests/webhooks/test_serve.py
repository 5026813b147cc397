"""Webhooks from a real ``stowage serve`` process, configured through the CLI."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from filestack.helpers import verify_webhook_signature

from stowage.core.webhooks import verify
from tests.servers.stowage_serve import StowageServe
from tests.webhooks.receiver import Receiver, js_sdk_verifies


async def test_serve_delivers_signed_events_and_logs_them(
    tmp_path: Path, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STOWAGE_WEBHOOK_ALLOW_PRIVATE", "true")
    monkeypatch.setenv("STOWAGE_WEBHOOK_RETRY_BASE_DELAY", "0.3")
    receiver.statuses = [502]  # the first delivery is retried once
    srv = StowageServe(tmp_path / "data")
    created = json.loads(srv.cli("apps", "create", "--json"))
    key, secret = created["api_key"], created["secret"]
    shown = json.loads(srv.cli("apps", "update", key, "--webhook", receiver.url))
    assert shown["webhooks"] == [receiver.url] and secret not in json.dumps(shown)
    srv.start()
    try:
        async with aiohttp.ClientSession() as http:
            auth = {"Authorization": "Basic " + base64.b64encode(f"app:{secret}".encode()).decode()}
            started = time.monotonic()
            async with http.post(
                f"{srv.api}/api/store/S3", params={"key": key, "filename": "a.txt"}, data=b"abc"
            ) as resp:
                assert resp.status == 200
                handle = (await resp.json())["handle"]
            async with http.post(
                f"{srv.api}/api/file/{handle}", params={"key": key}, data=b"abcd", headers=auth
            ) as resp:
                assert resp.status == 200
            async with http.delete(
                f"{srv.api}/api/file/{handle}", params={"key": key}, headers=auth
            ) as resp:
                assert resp.status == 200
            assert time.monotonic() - started < 2.0
        got = await receiver.wait_for(4, timeout=20)
        await logged_as_delivered(srv, 3)
    finally:
        assert srv.stop() == 0
    actions = sorted(r.json()["action"] for r in got)
    assert actions == ["fp.delete", "fp.overwrite", "fp.upload", "fp.upload"]
    checks = []
    for r in got:
        ts, sig = r.headers["FS-Timestamp"], r.headers["FS-Signature"]
        assert verify(secret, r.body, ts, sig)
        assert verify_webhook_signature(secret, r.body, r.headers) == (True, {})
        assert r.json()["text"]["url"] == f"{srv.cdn}/{handle}"
        checks.append({"secret": secret, "body": r.body, "timestamp": ts, "signature": sig})
    assert js_sdk_verifies(checks) == [True] * 4

    log = json.loads(srv.cli("webhooks", "log", "--app", key, "--json"))
    assert sorted((d["action"], d["status"], d["attempts"]) for d in log) == [
        ("fp.delete", "delivered", 1),
        ("fp.overwrite", "delivered", 1),
        ("fp.upload", "delivered", 2),
    ]
    text = srv.cli("webhooks", "log")
    assert "attempts=2 code=200" in text and secret not in text
    assert secret not in (srv.log.read_text() if srv.log else "")


async def test_sigterm_puts_attempts_in_flight_back_and_a_restart_delivers_them(
    tmp_path: Path, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STOWAGE_WEBHOOK_ALLOW_PRIVATE", "true")
    monkeypatch.setenv("STOWAGE_WEBHOOK_TIMEOUT", "60")
    receiver.hang = 120  # the first attempt never gets an answer
    srv = StowageServe(tmp_path / "data")
    created = json.loads(srv.cli("apps", "create", "--json", "--webhook", receiver.url))
    srv.start()
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{srv.api}/api/store/S3", params={"key": created["api_key"]}, data=b"x") as resp,
    ):
        assert resp.status == 200
    await receiver.wait_for(1)
    started = time.monotonic()
    assert srv.stop() == 0
    assert time.monotonic() - started < 10
    (row,) = json.loads(srv.cli("webhooks", "log", "--json"))
    assert (row["status"], row["attempts"]) == ("pending", 1)
    assert row["last_error"] == "interrupted by shutdown"

    receiver.hang = 0
    srv.start()
    try:
        await receiver.wait_for(2, timeout=20)
        (row,) = await logged_as_delivered(srv, 1)
        assert row["attempts"] == 2 and row["response_code"] == 200
    finally:
        assert srv.stop() == 0
    assert receiver.got[0].body == receiver.got[1].body


async def logged_as_delivered(srv: StowageServe, count: int) -> list[dict[str, Any]]:
    """Reads the log through the CLI (off the event loop: the receiver keeps answering)."""
    deadline = time.monotonic() + 15
    while True:
        rows: list[dict[str, Any]] = json.loads(
            await asyncio.to_thread(srv.cli, "webhooks", "log", "--json")
        )
        if len(rows) == count and all(r["status"] == "delivered" for r in rows):
            return rows
        assert time.monotonic() < deadline, rows
        await asyncio.sleep(0.1)
