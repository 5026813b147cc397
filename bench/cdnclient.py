"""The client of scenario 11's transformation requests (bench/processing.py and
bench/processing_tasks.py): every URL once, a few connections at a time, a 503 (the
engine's bounded job count) retried after its Retry-After."""

from __future__ import annotations

import asyncio
import time

import aiohttp

from bench.servers import Stowage

CONNECTIONS = 8


def cdn(stowage: Stowage) -> str:
    return f"http://127.0.0.1:{stowage.cdn_port}"


async def fetch_all(urls: list[str], connections: int) -> tuple[float, list[int], int]:
    """Every URL once, ``connections`` at a time; (requests per second, statuses, 503s).

    A 503 is the engine's back-pressure (its bounded job count): the client waits as its
    Retry-After says (at most a second) and asks again, as a team's client would; the
    time counts, and the number of 503s is reported."""
    queue = list(reversed(urls))
    statuses: list[int] = []
    busy = 0
    connector = aiohttp.TCPConnector(limit=connections)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as http:

        async def worker() -> None:
            nonlocal busy
            while queue:
                url = queue.pop()
                while True:
                    async with http.get(url) as resp:
                        await resp.read()
                        wait = resp.headers.get("Retry-After", "1")
                    if resp.status != 503:
                        statuses.append(resp.status)
                        break
                    busy += 1
                    await asyncio.sleep(min(1.0, float(wait) if wait.isdigit() else 1.0))

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(connections)))
        seconds = time.perf_counter() - started
    return len(urls) / seconds, statuses, busy
