"""Webhook tests: a real receiver on 127.0.0.1 and the API harness with fast retries."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from aiohttp import web

from stowage.registry.base import App, WebhookDelivery
from tests.api.harness import Harness

ROOT = Path(__file__).resolve().parents[2]


JS_SDK = (
    ROOT / ".test-servers" / "filestack-js"
)  # installed by scripts/setup.d/60-filestack-sdks.sh


@dataclass
class Received:
    at: float
    headers: dict[str, str]
    body: str

    def json(self) -> dict[str, Any]:
        result: dict[str, Any] = json.loads(self.body)
        return result


@dataclass
class Receiver:
    """Answers with ``statuses`` in turn (then 200); ``hang`` seconds before answering."""

    url: str = ""
    statuses: list[int] = field(default_factory=list)
    hang: float = 0.0
    got: list[Received] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.text()
        self.got.append(Received(time.time(), dict(request.headers), body))
        self.arrived.set()
        if self.hang:
            await asyncio.sleep(self.hang)
        status = self.statuses.pop(0) if self.statuses else 200
        return web.Response(status=status, text="ok")

    async def wait_for(self, count: int, timeout: float = 10.0) -> list[Received]:
        deadline = time.monotonic() + timeout
        while len(self.got) < count:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"{len(self.got)} deliveries arrived, expected {count}"
            self.arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.arrived.wait(), remaining)
        return self.got


async def source_file(_: web.Request) -> web.Response:
    return web.Response(text="fetched", content_type="text/plain")


async def with_webhook(h: Harness, app: App, url: str) -> App:
    updated = replace(app, webhooks=[url])
    await h.service.registry.update_app(updated)
    return updated


async def wait_log(
    h: Harness,
    count: int,
    status: str | None,
    timeout: float = 10.0,
    check: Callable[[WebhookDelivery], bool] = lambda d: True,
) -> list[WebhookDelivery]:
    """The newest ``count`` deliveries, once they all reached ``status`` and pass ``check``."""
    deadline = time.monotonic() + timeout
    while True:
        log = await h.service.registry.webhook_log(limit=count)
        if len(log) == count and all((status in (None, d.status)) and check(d) for d in log):
            return log
        assert time.monotonic() < deadline, [d.public() for d in log]
        await asyncio.sleep(0.05)


def js_sdk_verifies(deliveries: list[dict[str, str]]) -> list[bool]:
    """Each {secret, body, timestamp, signature} checked by filestack-js itself."""
    assert (JS_SDK / "node_modules" / "filestack-js").is_dir(), (
        "run scripts/setup.d/60-filestack-sdks.sh"
    )
    out = subprocess.run(
        ["node", str(ROOT / "tests" / "webhooks" / "js" / "verify.js"), str(JS_SDK)],
        input=json.dumps(deliveries),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    result: list[bool] = json.loads(out.stdout)
    return result
