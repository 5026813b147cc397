"""The lease of a running video job (processing/heartbeat.py, video_lease_seconds): a
node renews it while its job runs, so a job longer than the lease stays on its node; a
node killed mid-job stops renewing, and another node runs the job about a lease later."""

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
from stowage.processing import grammar
from stowage.processing.videojobs import job_key
from stowage.registry import upgrade_registry
from stowage.registry.base import VideoJob
from tests.api.balanced import start_node
from tests.api.harness import OPEN_APP
from tests.api.test_video import clip
from tests.api.test_video_nodes import ask, store_clip, until_ended
from tests.servers.fx_postgres import PostgresServer
from tests.servers.stowage_serve import StowageServe

LEASE = 2.0


@pytest.fixture
def base(tmp_path: Path, postgres_server: PostgresServer) -> Settings:
    return Settings(
        data_dir=tmp_path / "data",
        access_log=False,
        registry_url=postgres_server.new_database(),
        video_lease_seconds=LEASE,
    )


async def the_job(parts: Any, handle: str, task: str) -> VideoJob:
    record = await parts.registry.get(handle)
    job = await parts.registry.video_job(job_key(record, grammar.parse_task(task)))
    assert job is not None
    return job  # type: ignore[no-any-return]


async def test_a_job_longer_than_its_lease_stays_on_its_node(base: Settings) -> None:
    await upgrade_registry(base)
    nodes = [await start_node(dataclasses.replace(base, video_jobs=1)) for _ in range(2)]
    cdn = TestClient(nodes[0].cdn)
    try:
        a = nodes[0].parts
        await a.registry.create_app(OPEN_APP)
        for node in nodes:  # every job takes three leases: renewals must keep it
            stored = node.parts.video.store

            async def slow(*args: Any, _store: Any = stored, **kw: Any) -> Any:
                await asyncio.sleep(3 * LEASE)
                return await _store(*args, **kw)

            node.parts.video.store = slow
        handle = await store_clip(a, base.data_dir.parent)
        task = "video_convert=preset:thumbnail"
        done = await until_ended(cdn, task, handle)
        assert done["status"] == "completed"
        assert (await the_job(a, handle, task)).attempts == 1  # never taken over
    finally:
        await cdn.close()
        for node in reversed(nodes):
            await node.parts.close()


@pytest.fixture
async def survivor(base: Settings) -> AsyncIterator[tuple[Any, TestClient[Any, Any]]]:
    """A node in this process whose worker is stopped until the test starts it."""
    await upgrade_registry(base)
    node = await start_node(dataclasses.replace(base, video_jobs=1))
    cdn = TestClient(node.cdn)
    await node.parts.video.close()
    try:
        await node.parts.registry.create_app(OPEN_APP)
        yield node.parts, cdn
    finally:
        await cdn.close()
        await node.parts.close()


async def test_a_killed_nodes_job_is_run_by_another_within_a_lease(
    base: Settings, survivor: tuple[Any, TestClient[Any, Any]], tmp_path: Path
) -> None:
    b, cdn_b = survivor
    victim = StowageServe(
        base.data_dir,  # the same files and registry as the survivor
        env={
            "STOWAGE_REGISTRY_URL": str(base.registry_url),
            "STOWAGE_VIDEO_LEASE_SECONDS": str(LEASE),
            "STOWAGE_VIDEO_JOBS": "1",
        },
    )
    data = clip(tmp_path / "long.mp4", seconds=10, size="640x480")
    handle = await store_clip(b, tmp_path, data=data)
    task = "video_convert=preset:h264"
    victim.start()
    try:
        first = await ask(cdn_b, task, handle)  # only the victim's worker runs
        deadline = time.monotonic() + 30
        while (await the_job(b, handle, task)).status != "started":
            assert time.monotonic() < deadline, "the victim did not start the job"
            await asyncio.sleep(0.05)
        victim.kill()  # mid-conversion: no renewal, no hand-back
        killed = time.monotonic()
        assert (await the_job(b, handle, task)).status == "started"
        b.video.start()
        while (await the_job(b, handle, task)).attempts < 2:
            # The victim's last renewal held at most one lease; the survivor polls each second.
            assert time.monotonic() - killed < LEASE + 1.0 + 3.0, "not taken over in time"
            await asyncio.sleep(0.05)
        done = await until_ended(cdn_b, task, handle)
        assert done["status"] == "completed" and done["uuid"] == first["uuid"]
        assert (await the_job(b, handle, task)).attempts == 2
    finally:
        victim.stop_quietly()
