"""Graceful shutdown: on SIGTERM a node stops accepting connections, lets the requests in
flight finish (up to ``shutdown_timeout``), then exits 0. Readiness and liveness."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
from collections.abc import AsyncIterator

import aiohttp

from tests.servers.stowage_serve import Running


async def test_healthz_and_readyz(server: Running) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{server.server.api}/healthz") as resp:
            assert resp.status == 200 and await resp.json() == {"status": "ok"}
        async with http.get(f"{server.server.api}/readyz") as resp:
            assert resp.status == 200 and await resp.json() == {"status": "ready"}


async def test_sigterm_drains_an_upload_and_a_download_in_flight(server: Running) -> None:
    srv = server.server
    assert srv.proc is not None
    big = os.urandom(1024 * 1024) * 48  # more than loopback socket buffers hold
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(timeout=timeout) as http:
        async with http.post(
            f"{srv.api}/api/store/S3", params={"key": server.key}, data=big
        ) as resp:
            big_handle = (await resp.json())["handle"]

        half_sent = asyncio.Event()
        chunks = [os.urandom(64 * 1024) for _ in range(16)]

        async def slow_body() -> AsyncIterator[bytes]:
            for i, chunk in enumerate(chunks):
                if i == 4:
                    half_sent.set()
                    await asyncio.sleep(1.0)  # SIGTERM arrives here
                yield chunk
                await asyncio.sleep(0.05)

        store_url = f"{srv.api}/api/store/S3"
        upload = asyncio.create_task(_post(http, store_url, server.key, slow_body()))
        download = await http.get(f"{srv.api}/api/file/{big_handle}")
        first = await download.content.readexactly(1024 * 1024)
        await half_sent.wait()

        srv.proc.send_signal(signal.SIGTERM)
        await asyncio.sleep(0.3)
        assert srv.proc.poll() is None, "the node must wait for its requests"
        assert _refused(srv.port), "a draining node accepts no new connections"

        rest = await download.content.read()
        download.release()
        assert first + rest == big
        status, stored = await upload
        assert status == 200, stored
        assert stored["size"] == sum(len(c) for c in chunks)
    assert await asyncio.to_thread(srv.proc.wait, 30) == 0

    srv.start()
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"{srv.api}/api/file/{stored['handle']}") as resp,
    ):
        assert await resp.read() == b"".join(chunks)


async def _post(
    http: aiohttp.ClientSession, url: str, key: str, body: AsyncIterator[bytes]
) -> tuple[int, dict[str, object]]:
    async with http.post(url, params={"key": key}, data=body) as resp:
        return resp.status, await resp.json()


def _refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
    except OSError:
        return True
    return False
