"""Cross-node behaviour: state lives in PostgreSQL and S3, never on a node."""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from stowage.core.security import encode_policy, sign
from tests.multinode.cluster import PENDING_GRACE, Cluster


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
        yield session


def policy(cluster: Cluster, **fields: Any) -> dict[str, str]:
    fields.setdefault("expiry", int(time.time()) + 600)
    encoded = encode_policy(fields)
    return {"policy": encoded, "signature": sign(cluster.secret, encoded)}


async def store(http: aiohttp.ClientSession, base: str, key: str, data: bytes) -> dict[str, Any]:
    async with http.post(f"{base}/api/store/S3", params={"key": key}, data=data) as resp:
        assert resp.status == 200, await resp.text()
        result: dict[str, Any] = await resp.json()
        return result


async def read(http: aiohttp.ClientSession, base: str, handle: str) -> tuple[int, bytes]:
    async with http.get(f"{base}/api/file/{handle}") as resp:
        return resp.status, await resp.read()


async def test_every_node_and_the_balancer_are_ready(
    cluster: Cluster, http: aiohttp.ClientSession
) -> None:
    for base in [n.api for n in cluster.nodes] + [cluster.lb.api]:
        async with http.get(f"{base}/readyz") as resp:
            assert resp.status == 200
            assert await resp.json() == {"status": "ready"}


async def test_store_on_a_read_on_b_overwrite_on_c(
    cluster: Cluster, http: aiohttp.ClientSession
) -> None:
    a, b, c = cluster.nodes
    stored = await store(http, a.api, cluster.key, b"first version")
    handle = stored["handle"]
    assert stored["url"] == f"{cluster.lb.cdn}/{handle}"  # links point at the balancer
    assert await read(http, b.api, handle) == (200, b"first version")
    async with http.post(
        f"{c.api}/api/file/{handle}",
        params={"key": cluster.key, **policy(cluster, call=["write"], handle=handle)},
        data=b"second, longer version",
    ) as resp:
        assert resp.status == 200, await resp.text()
    for node in cluster.nodes:
        assert await read(http, node.api, handle) == (200, b"second, longer version")
        async with http.get(f"{node.api}/api/file/{handle}/metadata?size=true&sha256=true") as r:
            meta = await r.json()
        assert meta["size"] == 22
        assert meta["sha256"] == hashlib.sha256(b"second, longer version").hexdigest()
    async with http.get(f"{cluster.lb.cdn}/{handle}") as resp:
        assert await resp.read() == b"second, longer version"


async def test_the_same_delete_sent_to_every_node_succeeds_once(
    cluster: Cluster, http: aiohttp.ClientSession
) -> None:
    for _ in range(5):
        handle = (await store(http, cluster.lb.api, cluster.key, b"delete me"))["handle"]
        params = {"key": cluster.key, **policy(cluster, call=["remove"], handle=handle)}

        urls = [f"{n.api}/api/file/{handle}" for n in cluster.nodes for _ in range(2)]
        statuses = await asyncio.gather(*(_delete(http, url, params) for url in urls))
        assert sorted(statuses) == [200, 404, 404, 404, 404, 404]
        for node in cluster.nodes:
            assert (await read(http, node.api, handle))[0] == 404
        assert _object_keys(cluster, handle) == []


async def test_concurrent_overwrites_on_different_nodes_end_with_one_whole_writer(
    cluster: Cluster, http: aiohttp.ClientSession
) -> None:
    stored = await store(http, cluster.lb.api, cluster.key, b"original")
    handle = stored["handle"]
    params = {"key": cluster.key, **policy(cluster, call=["write"], handle=handle)}
    bodies = [bytes([65 + i]) * (200_000 + i) for i in range(3)]

    async def overwrite(base: str, body: bytes) -> int:
        async with http.post(f"{base}/api/file/{handle}", params=params, data=body) as resp:
            return resp.status

    statuses = await asyncio.gather(
        *(overwrite(n.api, body) for n, body in zip(cluster.nodes, bodies, strict=True))
    )
    assert statuses == [200, 200, 200]
    status, data = await read(http, cluster.lb.api, handle)
    assert status == 200 and data in bodies
    async with http.get(f"{cluster.lb.api}/api/file/{handle}/metadata?size=true") as resp:
        assert (await resp.json())["size"] == len(data)
    async with http.get(f"{cluster.lb.api}/api/file/{handle}/metadata?sha256=true") as resp:
        assert (await resp.json())["sha256"] == hashlib.sha256(data).hexdigest()


async def test_the_balancer_spreads_requests_over_the_nodes(
    cluster: Cluster, http: aiohttp.ClientSession
) -> None:
    before = [_served(n.log.read_text()) for n in cluster.nodes]
    handles = [
        (await store(http, cluster.lb.api, cluster.key, f"spread {i}".encode()))["handle"]
        for i in range(12)
    ]
    for i, handle in enumerate(handles):
        assert await read(http, cluster.lb.api, handle) == (200, f"spread {i}".encode())
    after = [_served(n.log.read_text()) for n in cluster.nodes]
    assert all(b > a for a, b in zip(before, after, strict=True)), (before, after)


async def test_a_node_killed_mid_overwrite_releases_its_lock(
    cluster: Cluster, http: aiohttp.ClientSession
) -> None:
    victim, other = cluster.nodes[2], cluster.nodes[1]
    handle = (await store(http, cluster.lb.api, cluster.key, b"old version"))["handle"]
    params = {"key": cluster.key, **policy(cluster, call=["write", "remove"], handle=handle)}
    sent = asyncio.Event()

    async def slow_body() -> AsyncIterator[bytes]:
        yield b"n" * 65536
        sent.set()
        await asyncio.sleep(3600)
        yield b""

    overwrite = asyncio.create_task(
        http.post(f"{victim.api}/api/file/{handle}", params=params, data=slow_body())
    )
    await sent.wait()
    await asyncio.sleep(0.5)  # the victim holds the handle's lock while the body streams
    victim.kill()
    with pytest.raises(aiohttp.ClientError):
        await overwrite
    assert await read(http, other.api, handle) == (200, b"old version")
    async with asyncio.timeout(10):  # the dead node's advisory lock went with its connection
        async with http.post(
            f"{other.api}/api/file/{handle}", params=params, data=b"new version"
        ) as resp:
            assert resp.status == 200, await resp.text()
    assert await read(http, cluster.lb.api, handle) == (200, b"new version")
    victim.start()


async def test_a_node_killed_mid_request_loses_nothing(
    cluster: Cluster, http: aiohttp.ClientSession
) -> None:
    victim = cluster.nodes[0]
    kept = {
        (await store(http, cluster.lb.api, cluster.key, data))["handle"]: data
        for data in (os.urandom(50_000) for _ in range(6))
    }
    big = os.urandom(1024 * 1024) * 32  # more than the socket buffers hold
    big_handle = (await store(http, victim.api, cluster.key, big))["handle"]
    kept[big_handle] = big

    sent = asyncio.Event()

    async def slow_body() -> AsyncIterator[bytes]:
        yield b"x" * 65536
        sent.set()
        await asyncio.sleep(3600)  # never finishes: the node dies first
        yield b""

    upload = asyncio.create_task(
        http.post(
            f"{victim.api}/api/store/S3",
            params={"key": cluster.key, "filename": "interrupted.bin"},
            data=slow_body(),
        )
    )
    # A slow download from the same node, half read when the node dies.
    download = await http.get(f"{victim.api}/api/file/{big_handle}")
    await download.content.readexactly(65536)
    await sent.wait()
    await asyncio.sleep(0.3)
    victim.kill()

    with pytest.raises(aiohttp.ClientError):
        await download.content.read()
    with pytest.raises(aiohttp.ClientError):
        await upload
    download.release()
    assert _pending_rows(cluster) == 1  # the interrupted store, younger than the grace

    # The others keep serving, through the balancer and directly; nothing stored is lost.
    for _ in range(3):
        for handle, data in kept.items():
            assert await read(http, cluster.lb.api, handle) == (200, data)
    fresh = await store(http, cluster.lb.api, cluster.key, b"after the crash")
    assert await read(http, cluster.nodes[1].api, fresh["handle"]) == (200, b"after the crash")

    # The interrupted store left a pending row that no node shows.
    assert "interrupted.bin" not in _keys_in_bucket(cluster)
    # The dead node does not come back: the others remove its abandoned store once it is
    # older than pending_grace_seconds (one node at a time).
    async with asyncio.timeout(PENDING_GRACE + 10):
        while _pending_rows(cluster):
            await asyncio.sleep(0.2)
    victim.start()
    for handle, data in kept.items():
        assert await read(http, victim.api, handle) == (200, data)


async def _delete(http: aiohttp.ClientSession, url: str, params: dict[str, str]) -> int:
    async with http.delete(url, params=params) as resp:
        return resp.status


def _served(log: str) -> int:
    return log.count(" GET /api/file/") + log.count(" POST /api/store/")


def _keys_in_bucket(cluster: Cluster) -> str:
    client = cluster.s3.client()
    try:
        listed = client.list_objects_v2(Bucket=cluster.s3.bucket)
        return "\n".join(obj["Key"] for obj in listed.get("Contents", []))
    finally:
        client.close()


def _object_keys(cluster: Cluster, handle: str) -> list[str]:
    rows = _psql(cluster, f"SELECT key FROM files WHERE handle = '{handle}'")
    return [r for r in rows.splitlines() if r]


def _pending_rows(cluster: Cluster) -> int:
    return int(_psql(cluster, "SELECT count(*) FROM files WHERE state = 'pending'").strip())


def _psql(cluster: Cluster, sql: str) -> str:
    import subprocess

    from tests.servers.fx_postgres import _bin

    out = subprocess.run(
        [_bin("psql"), "-X", "-At", cluster.dsn, "-c", sql],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout
