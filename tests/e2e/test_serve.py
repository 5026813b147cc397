"""The real server: every operation over real sockets, memory, crashes and shutdown."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import os
import sqlite3
from collections.abc import AsyncIterator
from urllib.parse import quote

import aiohttp

from tests.servers.stowage_serve import Running

MiB = 1024 * 1024


def basic(secret: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"app:{secret}".encode()).decode()}


async def blocks(
    count: int, size: int = MiB, pause_after: int | None = None
) -> AsyncIterator[bytes]:
    block = os.urandom(size)
    for i in range(count):
        if pause_after is not None and i == pause_after:
            await asyncio.sleep(3600)  # hold the upload open until the server is killed
        yield block


async def test_operations_over_real_sockets(server: Running) -> None:
    srv = server.server
    async with aiohttp.ClientSession() as http:
        resp = await http.post(
            f"{srv.api}/api/store/S3",
            params={"key": server.key, "filename": "e2e.txt"},
            data=b"end to end",
        )
        stored = await resp.json()
        assert resp.status == 200, stored
        handle = stored["handle"]
        assert stored["url"] == f"{srv.cdn}/{handle}"
        async with http.get(stored["url"]) as cdn:
            assert await cdn.read() == b"end to end"
        async with http.get(f"{srv.api}/api/file/{handle}/metadata", params={"sha1": "true"}) as m:
            assert (await m.json())["sha1"] == hashlib.sha1(b"end to end").hexdigest()
        async with http.post(
            f"{srv.api}/api/file/{handle}",
            data=b"changed",
            headers=basic(server.secret),
            params={"key": server.key},
        ) as o:
            assert (await o.json())["size"] == 7
        async with http.delete(
            f"{srv.api}/api/file/{handle}", headers=basic(server.secret), params={"key": server.key}
        ) as d:
            assert d.status == 200
        async with http.get(f"{srv.api}/api/file/{handle}") as gone:
            assert gone.status == 404


async def test_large_upload_and_download_keep_memory_flat(server: Running) -> None:
    srv = server.server
    size_mib = 256
    baseline = srv.peak_rss_kib()
    async with aiohttp.ClientSession() as http:
        resp = await http.post(
            f"{srv.api}/api/store/S3", params={"key": server.key}, data=blocks(size_mib)
        )
        stored = await resp.json()
        assert stored["size"] == size_mib * MiB
        received = 0
        async with http.get(f"{srv.api}/api/file/{stored['handle']}") as download:
            async for chunk in download.content.iter_chunked(MiB):
                received += len(chunk)
        assert received == size_mib * MiB
    growth_mib = (srv.peak_rss_kib() - baseline) / 1024
    assert growth_mib < 64, f"server peak RSS grew {growth_mib:.0f} MiB for a {size_mib} MiB file"


def _rows(srv: Running) -> list[tuple[str, str]]:
    db = sqlite3.connect(srv.server.data_dir / "stowage.db")
    try:
        return db.execute("SELECT handle, state FROM files").fetchall()
    finally:
        db.close()


def _files(srv: Running) -> list[str]:
    root = srv.server.data_dir / "storage"
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


async def _kill_mid_request(server: Running, url: str, **kwargs: object) -> None:
    async with aiohttp.ClientSession() as http:
        # A 100 MiB body (checklist 48); the server is killed once 50 MiB are on its disk.
        task = asyncio.create_task(http.post(url, data=blocks(100, pause_after=60), **kwargs))
        tmp = server.server.data_dir / "storage" / server.key / "tmp"
        for _ in range(600):
            await asyncio.sleep(0.05)
            if tmp.exists() and any(p.stat().st_size >= 50 * MiB for p in tmp.iterdir()):
                break
        else:
            raise AssertionError("the upload never reached the server's temp file")
        server.server.kill()
        with contextlib.suppress(aiohttp.ClientError):
            await task


async def test_kill_9_mid_store_leaves_nothing_after_restart(server: Running) -> None:
    srv = server.server
    await _kill_mid_request(server, f"{srv.api}/api/store/S3?key={server.key}")
    assert any(p.endswith(".part") for p in _files(server))  # the crash left its temp file
    assert [state for _, state in _rows(server)] == ["pending"]
    srv.start()
    assert _rows(server) == []
    assert _files(server) == []


async def test_kill_9_mid_overwrite_keeps_old_version(server: Running) -> None:
    srv = server.server
    async with aiohttp.ClientSession() as http:
        resp = await http.post(f"{srv.api}/api/store/S3", params={"key": server.key}, data=b"v1")
        handle = (await resp.json())["handle"]
    await _kill_mid_request(
        server, f"{srv.api}/api/file/{handle}?key={server.key}", headers=basic(server.secret)
    )
    srv.start()
    async with aiohttp.ClientSession() as http, http.get(f"{srv.api}/api/file/{handle}") as r:
        assert await r.read() == b"v1"
    assert not any(p.endswith(".part") for p in _files(server))


async def test_sigterm_stops_cleanly(server: Running) -> None:
    assert server.server.stop() == 0


async def test_secrets_and_signatures_never_reach_the_log(server: Running) -> None:
    await _secrets_never_logged(server)


async def test_secrets_and_signatures_never_reach_json_logs(json_server: Running) -> None:
    log = await _secrets_never_logged(json_server)
    records = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    access = [r for r in records if r.get("path", "").startswith("/api/file/")]
    assert len(access) >= 3
    for record in access:
        assert set(record) >= {"time", "level", "message", "method", "status", "request_id"}
        assert "?" not in record["path"] and "?" not in record["message"]


async def _secrets_never_logged(server: Running) -> str:
    from stowage.core.security import encode_policy, sign

    srv = server.server
    policy = encode_policy({"expiry": 4_000_000_000, "call": ["read", "store", "remove"]})
    signature = sign(server.secret, policy)
    query = {"key": server.key, "policy": policy, "signature": signature}
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{srv.api}/api/store/S3", params=query, data=b"x") as r:
            handle = (await r.json())["handle"]
        async with http.get(f"{srv.api}/api/file/{handle}", params=query) as r:
            assert r.status == 200
        async with http.get(
            f"{srv.api}/api/file/{handle}", params={**query, "signature": "0" * 64}
        ):
            pass
        # Transformation URLs carry the policy in the path, wherever the task stands.
        for path in (
            f"security=p:{policy},s:{signature}/flip/{handle}",
            f"{server.key}/security=policy:{policy},signature:{signature}/flip/{handle}",
            f"flip/security=p:{policy},s:{signature}/{handle}",
        ):
            async with http.get(f"{srv.cdn}/{path}") as r:
                assert r.status < 500, await r.text()
        # An external source's own query string and user part (another service's token).
        source = quote(f"https://user:{server.secret}@127.0.0.1:9/x.jpg?token={signature}", "")
        async with http.get(f"{srv.cdn}/{server.key}/flip/{source}") as r:
            assert r.status >= 400
        # The same in filestack-js's base64 form.
        tasks = [{"name": "security", "params": {"policy": policy, "signature": signature}}]
        encoded = _b64(json.dumps([*tasks, {"name": "flip"}]))
        sdk_path = (
            f"{server.key}/b64/{encoded}/b64://{_b64(f'https://127.0.0.1:9/x.jpg?t={policy}')}"
        )
        async with http.get(f"{srv.cdn}/{sdk_path}") as r:
            assert r.status >= 400
        async with http.delete(
            f"{srv.api}/api/file/{handle}", params={"key": server.key}, headers=basic(server.secret)
        ) as r:
            assert r.status == 200
    srv.stop()
    assert srv.log is not None
    log = srv.log.read_text()
    assert "/api/file/" in log  # the access log is on, and written
    assert log.count("security=[redacted]") >= 4 and log.count("x.jpg?[redacted]") >= 2
    for secret in (
        server.secret,
        signature,
        policy,
        base64.b64encode(server.secret.encode()).decode(),
        encoded,
    ):
        assert secret not in log
    return log


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")
