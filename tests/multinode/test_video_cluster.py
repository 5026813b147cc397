"""video_convert on the reference cluster: three real ``stowage serve`` nodes on one
PostgreSQL and one S3 server (moto) behind nginx. The source and the result live in S3;
the job asked through one node is answered the same by every node and by the balancer."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.api.test_video import clip
from tests.multinode.cluster import Cluster


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
        yield session


async def status(http: aiohttp.ClientSession, base: str, path: str) -> dict[str, Any]:
    async with http.get(f"{base}{path}") as resp:
        assert resp.status == 200, await resp.text()
        found: dict[str, Any] = await resp.json()
        return found


async def test_a_job_through_any_node_with_s3_and_postgres(
    cluster: Cluster, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    a, b, c = cluster.nodes
    data = clip(tmp_path / "c.mp4", seconds=2, size="160x120")
    async with http.post(
        f"{a.api}/api/store/S3", params={"key": cluster.key, "filename": "c.mp4"}, data=data
    ) as resp:
        assert resp.status == 200, await resp.text()
        handle = (await resp.json())["handle"]
    path = f"/{cluster.key}/video_convert=preset:webm,width:64,height:48/{handle}"
    asked = await asyncio.gather(*(status(http, n.cdn, path) for n in (a, b, c)))
    assert len({x["uuid"] for x in asked}) == 1
    deadline = time.monotonic() + 90
    while (found := await status(http, cluster.lb.cdn, path))["status"] != "completed":
        assert found["status"] in ("pending", "started"), found
        assert time.monotonic() < deadline, "the job did not complete"
        await asyncio.sleep(0.2)
    for node in (a, b, c):
        assert await status(http, node.cdn, path) == found
    result = found["data"]["url"].rsplit("/", 1)[-1]
    async with http.get(f"{c.api}/api/file/{result}") as resp:
        assert resp.status == 200
        (tmp_path / "r.webm").write_bytes(await resp.read())
    probed = json.loads(
        subprocess.run(
            ["ffprobe", "-v", "error", "-show_streams", "-of", "json", str(tmp_path / "r.webm")],
            check=True,
            capture_output=True,
        ).stdout
    )
    video = next(s for s in probed["streams"] if s["codec_type"] == "video")
    assert (video["codec_name"], video["width"], video["height"]) == ("vp8", 64, 48)
