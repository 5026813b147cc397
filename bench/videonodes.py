"""Scenario 13's third row (issue 27): the time from a thumbnail's first request to
``completed`` with 2 nodes and 8 concurrent jobs, p50 and p99.

Two ``stowage serve`` processes of one worker each (one job slot each: the machine has
two cores) share a data folder, so one SQLite registry (the lease queue) and one local
disk; each is a node as a PostgreSQL-backed one is (its own HTTP listeners, its own job
worker claiming from the shared queue). Each round asks 8 thumbnails of new sources at
once, 4 through each node; a job's time runs from the moment its request was sent to
its end as its registry row recorded it (``updated``), the status being polled every
0.25 s (polling often would take the jobs' CPU). The reference is one run of the job's
own ffmpeg command, alone: the least a thumbnail can take.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import re
import sqlite3
import statistics
import time
import urllib.request
from pathlib import Path

import aiohttp

from bench.scenarios import Context, Row, _stowage_store
from bench.servers import Stowage

NODES = 2
JOBS = 8


def _percentile(values: list[float], share: float) -> float:
    """The nearest-rank percentile (``share`` in 0..1)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


async def until_completed(http: aiohttp.ClientSession, url: str, poll: float) -> None:
    """Polls a conversion's status URL until it is completed; a failure raises."""
    while True:
        async with http.get(url) as resp:
            found = await resp.json()
            if resp.status != 200 or found.get("status") == "failed":
                raise RuntimeError(f"{url}: {resp.status} {found}")
            if found["status"] == "completed":
                return
        await asyncio.sleep(poll)


async def _round(urls: list[str], registry: Path, poll: float) -> list[float]:
    """Every URL asked at once; each job's seconds from its first request to its end."""
    sent: dict[str, float] = {}

    async def one(http: aiohttp.ClientSession, url: str) -> None:
        sent[url] = time.time()
        await until_completed(http, url, poll)

    async with aiohttp.ClientSession() as http:
        await asyncio.gather(*(one(http, url) for url in urls))
    with contextlib.closing(sqlite3.connect(f"file:{registry}?mode=ro", uri=True)) as db:
        ended = dict(
            db.execute("SELECT handle, updated FROM video_jobs WHERE status = 'completed'")
        )
    return [float(ended[url.rsplit("/", 1)[-1]]) - sent[url] for url in urls]


def _completed(node: Stowage) -> int:
    """Jobs the node ran to completion (its ``stowage_video_jobs_total`` counter)."""
    with urllib.request.urlopen(f"{node.url}/metrics") as resp:
        text = resp.read().decode()
    found = re.search(r'stowage_video_jobs_total\{outcome="completed"\} ([\d.]+)', text)
    return int(float(found[1])) if found else 0


def two_nodes_row(
    ctx: Context, clip: Path, task: str, alone: float, rate: int, poll: float
) -> list[Row]:
    """p50 and p99 over ``ctx.sizes.rounds`` rounds of 8 jobs on 2 nodes."""
    root = ctx.tmp / "video-nodes"
    root.mkdir(parents=True, exist_ok=True)
    nodes = [Stowage(root, 1) for _ in range(NODES)]  # one data folder: one registry
    times: list[float] = []
    ran: list[int] = []
    try:
        for node in nodes:
            node.start()
        key, secret = nodes[0].create_app()
        there = Context(root, ctx.sizes, nodes[0], None, None)  # type: ignore[arg-type]
        there.key, there.secret = key, secret
        registry = nodes[0].data_dir / "stowage.db"
        for _ in range(max(1, ctx.sizes.rounds)):
            handles = [_stowage_store(there, clip) for _ in range(JOBS)]
            urls = [
                f"http://127.0.0.1:{nodes[n % NODES].cdn_port}/{key}/{task}/{h}"
                for n, h in enumerate(handles)
            ]
            times += asyncio.run(_round(urls, registry, poll))
        ran = [_completed(node) for node in nodes]
        if min(ran) == 0:  # both nodes must have run jobs
            raise RuntimeError(f"jobs completed per node: {ran}")
    finally:
        for node in nodes:
            node.stop()
    p50, p99 = statistics.median(times), _percentile(times, 0.99)
    label = f"one thumbnail by the job's ffmpeg command alone (nice 10), {rate} fps 1080p"
    name = f"  thumbnail, first request to completed, {NODES} nodes (1 job slot each), "
    name += f"{JOBS} jobs asked at once"
    extra = {"runs": [round(t, 3) for t in times], "jobs": len(times), "per_node": ran}
    return [
        Row("13", f"{name}: p50", "s", p50, reference=alone, reference_label=label, extra=extra),
        Row("13", f"{name}: p99", "s", p99, reference=alone, reference_label=label, extra=extra),
    ]
