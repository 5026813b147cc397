"""``stowage serve --workers 2``: recovery once in the parent, two processes on one port,
handle operations serialised across them, a clean SIGTERM."""

from __future__ import annotations

import asyncio
import base64
import json
import os
from pathlib import Path

import aiohttp
import pytest

from tests.servers.procs import children
from tests.servers.stowage_serve import StowageServe


async def test_two_workers_serve_share_locks_and_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    srv = StowageServe(tmp_path / "data")
    created = json.loads(srv.cli("apps", "create", "--json"))
    key, secret = created["api_key"], created["secret"]
    stray = srv.data_dir / "storage" / key / "tmp" / "crashed.part"
    stray.parent.mkdir(parents=True)
    stray.write_bytes(b"left by a crash")
    monkeypatch.setenv("STOWAGE_WORKERS", "2")
    srv.start()
    try:
        assert srv.proc is not None
        await _wait_for_workers(srv.proc.pid, 2)
        assert not stray.exists()  # the parent swept before the workers started
        async with aiohttp.ClientSession() as http:
            bodies = [os.urandom(1000 + i) for i in range(20)]
            handles = await asyncio.gather(*(_store(http, srv, key, b) for b in bodies))
            for handle, body in zip(handles, bodies, strict=True):
                async with http.get(f"{srv.api}/api/file/{handle}") as resp:
                    assert resp.status == 200 and await resp.read() == body
            statuses = await asyncio.gather(
                *(_delete(http, srv, key, secret, handles[0]) for _ in range(8))
            )
            assert sorted(statuses) == [200] + [404] * 7
        workers = children(srv.proc.pid)
        assert srv.stop() == 0
        assert all(not Path(f"/proc/{pid}").exists() for pid in workers)
    finally:
        if srv.proc is not None and srv.proc.poll() is None:
            srv.kill()


async def _wait_for_workers(pid: int, count: int) -> None:
    for _ in range(200):
        if len(children(pid)) >= count:
            await asyncio.sleep(0.3)  # both have bound their sockets
            return
        await asyncio.sleep(0.05)
    raise AssertionError("workers did not start")


async def _store(http: aiohttp.ClientSession, srv: StowageServe, key: str, body: bytes) -> str:
    async with http.post(f"{srv.api}/api/store/S3", params={"key": key}, data=body) as resp:
        assert resp.status == 200, await resp.text()
        return str((await resp.json())["handle"])


async def _delete(
    http: aiohttp.ClientSession, srv: StowageServe, key: str, secret: str, handle: str
) -> int:
    # A fresh connection each, so that the kernel spreads them over both workers.
    async with (
        aiohttp.ClientSession() as own,
        own.delete(
            f"{srv.api}/api/file/{handle}",
            params={"key": key},
            headers={
                "Authorization": "Basic " + base64.b64encode(f"app:{secret}".encode()).decode()
            },
        ) as resp,
    ):
        return resp.status
