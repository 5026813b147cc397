"""Video jobs across nodes on one PostgreSQL registry (processing/videojobs.py): a job
asked on a node that runs no conversions is run by another and answered the same by
both; one conversion asked on two nodes at once is one job; a job whose node stopped
(its lease expired) is taken over and completed."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from stowage.config import Settings
from stowage.core.security import Credentials
from stowage.core.service import StoreParams
from stowage.core.sources import Source
from stowage.processing import grammar
from stowage.processing.videojobs import job_key
from stowage.registry import upgrade_registry
from tests.api.balanced import start_node
from tests.api.harness import OPEN_APP
from tests.api.test_video import ENDED, clip
from tests.servers.fx_postgres import PostgresServer

Client = TestClient[Any, Any]


@pytest.fixture
async def nodes(
    tmp_path: Path, postgres_server: PostgresServer
) -> AsyncIterator[tuple[Any, Client, Any, Client]]:
    """Node A runs no conversions (video_jobs=0); node B runs them."""
    base = Settings(
        data_dir=tmp_path / "data",
        access_log=False,
        registry_url=postgres_server.new_database(),
    )
    await upgrade_registry(base)
    a = await start_node(dataclasses.replace(base, video_jobs=0))
    b = await start_node(dataclasses.replace(base, video_jobs=1))
    clients = [TestClient(a.cdn), TestClient(b.cdn), TestClient(a.api)]
    try:
        await a.parts.registry.create_app(OPEN_APP)
        yield a.parts, clients[0], b.parts, clients[1]
    finally:
        for client in clients:
            await client.close()
        await b.parts.close()
        await a.parts.close()


async def ask(cdn: Client, task: str, handle: str) -> dict[str, Any]:
    resp = await cdn.get(f"/{OPEN_APP.api_key}/{task}/{handle}")
    assert resp.status == 200, await resp.text()
    found: dict[str, Any] = await resp.json()
    return found


async def until_ended(cdn: Client, task: str, handle: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = await ask(cdn, task, handle)
        if found["status"] in ENDED:
            return found
        await asyncio.sleep(0.1)
    raise AssertionError("the job did not end")


async def store_clip(parts: Any, tmp_path: Path, data: bytes | None = None) -> str:
    data = clip(tmp_path / "c.mp4") if data is None else data

    async def chunks() -> AsyncIterator[bytes]:
        yield data

    source = Source(chunks=chunks(), filename="c.mp4", content_type="video/mp4")
    record = await parts.service.store(
        OPEN_APP.api_key, "S3", source, StoreParams(filename="c.mp4"), Credentials()
    )
    return str(record.handle)


async def test_asked_on_one_node_run_by_another_answered_the_same(
    nodes: Any, tmp_path: Path
) -> None:
    a, cdn_a, _b, cdn_b = nodes
    handle = await store_clip(a, tmp_path)
    task = "video_convert=preset:thumbnail,thumbnail_offset:1"
    asked = await asyncio.gather(*(ask(c, task, handle) for c in (cdn_a, cdn_b, cdn_a, cdn_b)))
    assert len({x["uuid"] for x in asked}) == 1  # one job, whichever node was asked
    done_a = await until_ended(cdn_a, task, handle)  # A runs none: B's worker did it
    done_b = await ask(cdn_b, task, handle)
    assert done_a["status"] == "completed" and done_a == done_b
    record = await a.registry.get(handle)
    job = await a.registry.video_job(job_key(record, grammar.parse_task(task)))
    assert job is not None and job.attempts == 1 and job.uuid == done_a["uuid"]


async def test_a_stopped_nodes_job_is_taken_over(nodes: Any, tmp_path: Path) -> None:
    a, cdn_a, b, _ = nodes
    await b.video.close()  # B's worker stops: the job waits
    handle = await store_clip(a, tmp_path)
    task = "video_convert=preset:thumbnail"
    first = await ask(cdn_a, task, handle)
    # A node that then died claimed it with a short lease.
    [held] = await a.registry.claim_videos("dead-node", time.time(), 0.5, 1)
    assert held.uuid == first["uuid"]
    assert (await ask(cdn_a, task, handle))["status"] == "started"
    b.video.start()
    done = await until_ended(cdn_a, task, handle)
    assert done["status"] == "completed" and done["uuid"] == first["uuid"]


async def test_a_node_that_stops_gives_its_job_back_at_once(nodes: Any, tmp_path: Path) -> None:
    a, cdn_a, b, _ = nodes
    handle = await store_clip(a, tmp_path)
    blocked = asyncio.Event()

    async def never(*_args: Any, **_kw: Any) -> None:
        blocked.set()
        await asyncio.sleep(3600)

    b.video.store = never  # B's job hangs in its store step, then B stops
    task = "video_convert=preset:thumbnail"
    first = await ask(cdn_a, task, handle)
    await asyncio.wait_for(blocked.wait(), 30)
    assert (await ask(cdn_a, task, handle))["status"] == "started"
    await b.video.close()
    again = await ask(cdn_a, task, handle)
    assert again["status"] == "pending" and again["uuid"] == first["uuid"]  # not leased
