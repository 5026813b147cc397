"""Deliveries through the API harness to a real receiver on 127.0.0.1."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
from typing import Any

import pytest
from filestack.helpers import verify_webhook_signature

from stowage.core.webhooks import verify
from stowage.registry.base import App, WebhookDelivery
from tests.webhooks.receiver import (
    Harness,
    Receiver,
    js_sdk_verifies,
    wait_log,
    with_webhook,
)

SECRET_AUTH = {"Authorization": "Basic " + base64.b64encode(b"app:open-secret").decode()}


async def store_overwrite_delete(h: Harness, app: App) -> dict[str, Any]:
    stored = await h.store(b"hello", app, filename="hi.txt")
    handle = stored["handle"]
    key = {"key": app.api_key}
    over = await h.api.post(
        f"/api/file/{handle}", params=key, data=b"a longer body", headers=SECRET_AUTH
    )
    assert over.status == 200, await over.text()
    gone = await h.api.delete(f"/api/file/{handle}", params=key, headers=SECRET_AUTH)
    assert gone.status == 200, await gone.text()
    return stored


async def test_store_overwrite_delete_arrive_signed(harness: Harness, receiver: Receiver) -> None:
    app = await with_webhook(harness, harness.open_app, receiver.url)
    stored = await store_overwrite_delete(harness, app)
    got = await receiver.wait_for(3)
    bodies = [r.json() for r in got]
    assert [b["action"] for b in bodies] == ["fp.upload", "fp.overwrite", "fp.delete"]
    assert len({b["id"] for b in bodies}) == 3
    for b in bodies:
        assert b["text"]["url"] == stored["url"] and b["text"]["handle"] == stored["handle"]
        assert isinstance(b["timestamp"], int) and abs(b["timestamp"] - time.time()) < 60
    upload, overwrite, _ = bodies
    assert upload["text"]["data"] == {"filename": "hi.txt", "type": "text/plain", "size": 5}
    assert upload["text"]["key"] == stored["key"] and upload["text"]["status"] == "Stored"
    assert overwrite["text"]["size"] == 13 and overwrite["text"]["data"]["size"] == 13

    checks = []
    for r in got:
        ts, sig = r.headers["FS-Timestamp"], r.headers["FS-Signature"]
        assert r.headers["Content-Type"] == "application/json"
        assert abs(int(ts) - time.time()) < 60 and sig == sig.lower() and len(sig) == 64
        assert verify("open-secret", r.body, ts, sig)
        assert verify_webhook_signature("open-secret", r.body.encode(), r.headers) == (True, {})
        checks.append({"secret": "open-secret", "body": r.body, "timestamp": ts, "signature": sig})
    assert js_sdk_verifies(checks) == [True, True, True]
    log = await wait_log(harness, 3, "delivered")
    assert [(d.attempts, d.response_code, d.last_error) for d in log] == [(1, 200, "")] * 3


async def test_failures_are_retried_with_backoff_until_one_success(
    harness: Harness, receiver: Receiver
) -> None:
    receiver.statuses = [500, 500]
    app = await with_webhook(harness, harness.open_app, receiver.url)
    await harness.store(b"x", app)
    got = await receiver.wait_for(3)
    base = harness.settings.webhook_retry_base_delay
    assert got[1].at - got[0].at >= base * 0.9
    assert got[2].at - got[1].at >= 2 * base * 0.9
    assert len({r.body for r in got}) == 1  # the same event, re-signed each time
    assert len({r.json()["id"] for r in got}) == 1
    (d,) = await wait_log(harness, 1, "delivered")
    assert (d.attempts, d.response_code, d.last_error) == (3, 200, "")
    await receiver_stays_quiet(receiver, 3, seconds=4 * base)

    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "stowage",
            "--data-dir",
            str(harness.settings.data_dir),
            "webhooks",
            "log",
            "--app",
            app.api_key,
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    (row,) = json.loads(out.stdout)
    assert row["status"] == "delivered" and row["attempts"] == 3 and row["response_code"] == 200
    assert row["url"] == receiver.url and row["action"] == "fp.upload"
    assert "open-secret" not in out.stdout


async def test_gives_up_after_max_attempts(harness: Harness, receiver: Receiver) -> None:
    receiver.statuses = [503] * 50
    harness.settings.webhook_max_attempts = 3
    app = await with_webhook(harness, harness.open_app, receiver.url)
    await harness.store(b"x", app)
    (d,) = await wait_log(harness, 1, "failed")
    assert (d.attempts, d.response_code, d.last_error) == (3, 503, "the receiver answered 503")
    await receiver_stays_quiet(receiver, 3, seconds=1.5)


async def test_a_hanging_receiver_does_not_slow_requests(
    harness: Harness, receiver: Receiver
) -> None:
    receiver.hang = 30
    app = await with_webhook(harness, harness.open_app, receiver.url)
    started = time.monotonic()
    for _ in range(5):
        await harness.store(b"x", app)
    elapsed = time.monotonic() - started
    await receiver.wait_for(5)
    assert elapsed < 1.0, elapsed
    # the attempts time out (webhook_timeout 2 s) and are tried again
    await wait_log(harness, 5, None, check=lambda d: d.last_error == "no answer within 2 s")
    log = await wait_log(harness, 5, None, check=lambda d: d.attempts >= 2)
    assert {d.status for d in log} <= {"pending", "delivering"}


async def test_each_url_of_the_app_gets_the_event(harness: Harness, receiver: Receiver) -> None:
    from dataclasses import replace

    app = replace(harness.open_app, webhooks=[receiver.url, receiver.url + "?second=1"])
    await harness.service.registry.update_app(app)
    await harness.store(b"x", app)
    got = await receiver.wait_for(2)
    assert got[0].body == got[1].body


async def receiver_stays_quiet(receiver: Receiver, count: int, seconds: float) -> None:
    import asyncio

    await asyncio.sleep(seconds)
    assert len(receiver.got) == count


async def test_a_failing_queue_never_fails_the_request(
    harness: Harness, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = await with_webhook(harness, harness.open_app, receiver.url)

    async def full_disk(deliveries: list[WebhookDelivery]) -> list[WebhookDelivery]:
        raise OSError("no space left on device")

    monkeypatch.setattr(harness.service.registry, "enqueue_webhooks", full_disk)
    stored = await harness.store(b"x", app)
    assert (await harness.api.get(f"/api/file/{stored['handle']}")).status == 200
