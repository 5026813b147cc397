"""Work queued in PostgreSQL and picked up by any node: webhook deliveries (claimed by
exactly one node) and multipart uploads (parts sent to different nodes)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from tests.multinode.cluster import Cluster


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
        yield session


async def test_each_webhook_is_delivered_exactly_once(
    cluster: Cluster, http: aiohttp.ClientSession
) -> None:
    got: list[dict[str, Any]] = []

    async def receive(request: web.Request) -> web.Response:
        got.append(json.loads(await request.text()))
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/hook", receive)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        created = json.loads(
            cluster.cli("apps", "create", "--json", "--webhook", f"http://127.0.0.1:{port}/hook")
        )
        handles = []
        for i in range(30):  # through the balancer, and straight to each node
            base = cluster.lb.api if i % 2 else cluster.nodes[i % 3].api
            async with http.post(
                f"{base}/api/store/S3", params={"key": created["api_key"]}, data=b"w%d" % i
            ) as resp:
                assert resp.status == 200, await resp.text()
                handles.append((await resp.json())["handle"])
        deadline = time.monotonic() + 30
        while len(got) < len(handles) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        await asyncio.sleep(3)  # time for any duplicate to show up
    finally:
        await runner.cleanup()
    uploads = [b["text"]["handle"] for b in got if b["action"] == "fp.upload"]
    assert sorted(uploads) == sorted(handles)
    assert len({b["id"] for b in got}) == len(got)


def _md5(data: bytes) -> str:
    return base64.b64encode(hashlib.md5(data).digest()).decode()


async def _post(http: aiohttp.ClientSession, url: str, **body: Any) -> dict[str, Any]:
    async with http.post(url, json=body) as resp:
        assert resp.status == 200, await resp.text()
        result: dict[str, Any] = await resp.json()
        return result


async def test_multipart_parts_on_different_nodes_complete_on_another(
    cluster: Cluster, http: aiohttp.ClientSession
) -> None:
    part_size = 5 * 1024 * 1024
    data = os.urandom(part_size) + os.urandom(part_size) + os.urandom(1234)
    parts = [data[i : i + part_size] for i in range(0, len(data), part_size)]
    a, b, c = (n.api for n in cluster.nodes)
    started = await _post(
        http,
        f"{a}/multipart/start",
        apikey=cluster.key,
        filename="big.bin",
        mimetype="application/octet-stream",
        size=len(data),
        store={"location": "s3"},
    )
    etags = []
    for n, (chunk, base) in enumerate(zip(parts, (b, c, a), strict=True), start=1):
        target = await _post(
            http,
            f"{base}/multipart/upload",
            apikey=cluster.key,
            upload_id=started["upload_id"],
            uri=started["uri"],
            region=started["region"],
            part=n,
            size=len(chunk),
            md5=_md5(chunk),
        )
        # The URL names the balancer; each piece goes to its own node on purpose.
        put_url = target["url"].replace(cluster.lb.api, base, 1)
        async with http.put(put_url, data=chunk, headers=target["headers"]) as resp:
            assert resp.status == 200, await resp.text()
            etags.append({"part_number": n, "etag": resp.headers["ETag"]})
    # The pieces wait in the shared bucket, not on the nodes that took them.
    assert len(_pieces(cluster, started["upload_id"])) == 3
    assert not any((n.data_dir / "uploads").exists() for n in cluster.nodes)
    done = await _post(
        http,
        f"{c}/multipart/complete",
        apikey=cluster.key,
        upload_id=started["upload_id"],
        parts=etags,
    )
    async with http.get(f"{cluster.lb.api}/api/file/{done['handle']}") as resp:
        assert await resp.read() == data
    assert _pieces(cluster, started["upload_id"]) == []  # removed once the file is stored


def _pieces(cluster: Cluster, upload_id: str) -> list[str]:
    client = cluster.s3.client()
    try:
        listed = client.list_objects_v2(
            Bucket=cluster.s3.bucket, Prefix=f".stowage-uploads/{upload_id}/"
        )
    finally:
        client.close()
    return [item["Key"] for item in listed.get("Contents", [])]
