"""In-process API tests: the real aiohttp apps over a real loopback socket. The ``harness``
and ``settings`` fixtures are defined here and registered by the conftests that use them
(tests/api, tests/core, tests/reliability, tests/webhooks)."""

from __future__ import annotations

import asyncio
import dataclasses
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient
from click.testing import CliRunner

from stowage.assembly import Assembly
from stowage.cli import main
from stowage.config import Settings
from stowage.core.security import encode_policy, sign
from stowage.core.service import Stowage
from stowage.core.uploads import Uploads
from stowage.registry.base import App
from tests.api.balanced import Nodes, balanced_nodes, start_node, through_nginx


@dataclass
class Harness:
    parts: Assembly
    api: TestClient[Any, Any]
    cdn: TestClient[Any, Any]
    settings: Settings
    open_app: App
    secure_app: App
    node_api: TestClient[Any, Any]  # one node's own API port (never a proxy): /metrics

    async def metrics(self) -> str:
        return await (await self.node_api.get("/metrics")).text()

    @property
    def service(self) -> Stowage:
        return self.parts.service

    @property
    def uploads(self) -> Uploads:
        return self.parts.uploads

    def policy(self, app: App, **fields: Any) -> dict[str, str]:
        fields.setdefault("expiry", int(time.time()) + 600)
        encoded = encode_policy(fields)
        return {"policy": encoded, "signature": sign(app.secret, encoded)}

    async def store(
        self, data: bytes = b"hello", app: App | None = None, **query: Any
    ) -> dict[str, Any]:
        app = app or self.open_app
        params = {"key": app.api_key, **query}
        if app.security:
            params.update(self.policy(app, call=["store"]))
        resp = await self.api.post("/api/store/S3", params=params, data=data)
        assert resp.status == 200, await resp.text()
        result: dict[str, Any] = await resp.json()
        return result

    async def cli(self, *args: str) -> tuple[int, str]:
        """``stowage --data-dir <this node's> ARGS`` in a thread: the command runs its own
        event loop, as from a shell. Its exit code and output."""
        command = ["--data-dir", str(self.settings.data_dir), *args]
        result = await asyncio.to_thread(CliRunner().invoke, main, command)
        assert result.exception is None or isinstance(result.exception, SystemExit), result.output
        return result.exit_code, result.output

    def object_path(self, app: App, key: str, container: str = "default") -> Path:
        return self.settings.data_dir / "storage" / app.api_key / "objects" / container / key


@pytest.fixture
def settings(tmp_path: Path, request: pytest.FixtureRequest) -> Settings:
    """The settings every node of the harness runs with; ``@pytest.mark.settings(...)``
    changes fields for one test (never patch ``harness.service``: through nginx, other
    nodes answer too)."""
    base = Settings(
        data_dir=tmp_path / "data",
        fetch_allow_private=True,
        access_log=False,
        office_prewarm=False,  # tests/conftest.py; the pre-warming tests turn it on
    )
    marker = request.node.get_closest_marker("settings")
    return dataclasses.replace(base, **marker.kwargs) if marker else base


OPEN_APP = App(api_key="openappkey0000000001", secret="open-secret", name="open")
SECURE_APP = App(api_key="secureappkey00000001", secret="secure-secret", security=True)


@asynccontextmanager
async def one_node(settings: Settings) -> AsyncIterator[Nodes]:
    node = await start_node(settings)
    api, cdn = TestClient(node.api), TestClient(node.cdn)  # closing a client closes its server
    try:
        yield node.parts, api, cdn, settings, api
    finally:
        await api.close()
        await cdn.close()
        await node.parts.close()
        await report_leftover_tasks()


async def report_leftover_tasks(seconds: float = 5.0) -> None:
    """Tasks still running once a node has closed are cancelled as the test's loop closes;
    one that does not end then hangs the run. Their stacks are printed here first (the
    test's captured output), so that such a hang names its task."""
    others = asyncio.all_tasks() - {asyncio.current_task()}
    if others:
        _, pending = await asyncio.wait(others, timeout=seconds)
        for task in pending:
            print(f"still running {seconds} s after the node closed: {task!r}", file=sys.stderr)
            task.print_stack(file=sys.stderr)


@pytest.fixture
async def harness(settings: Settings, request: pytest.FixtureRequest) -> AsyncIterator[Harness]:
    if through_nginx():
        nodes = balanced_nodes(settings, request.getfixturevalue("postgres_server"))
    else:
        nodes = one_node(settings)
    async with nodes as (parts, api, cdn, used, direct):
        await parts.registry.create_app(OPEN_APP)
        await parts.registry.create_app(SECURE_APP)
        yield Harness(parts, api, cdn, used, OPEN_APP, SECURE_APP, direct)
