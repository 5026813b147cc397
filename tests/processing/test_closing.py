"""A server stopping ends its transformations: a job that gets its slot after the pool
closed starts no process, and the derivative cache's computations in flight are stopped
(a loop that closed with one still running used to wait for it without end)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
import pyvips

from stowage import errors
from stowage.processing import chain as chains
from stowage.processing.base import Job, Limits
from stowage.processing.cache import DerivativeCache
from stowage.processing.pool import JobPool
from stowage.storage.local import LocalProvider
from tests.api.test_transform_jobs import SLOW, job_processes

LIMITS = Limits(
    max_input_pixels=10**8, max_input_bytes=10**8, max_output_dimension=10**4, seconds=30
)


def job(tmp_path: Path, segments: list[str], name: str) -> Job:
    source = tmp_path / "tiny.png"
    if not source.exists():
        pyvips.Image.black(2, 2).pngsave(str(source))
    chain = chains.parse(segments)
    output = chains.output_for(chain, "image/png")
    return Job(source, chain, output, tmp_path / f"{name}.png", LIMITS)


async def test_a_job_given_its_slot_after_close_starts_no_process(tmp_path: Path) -> None:
    pool = JobPool(jobs=1, queue=1, seconds=30, memory=0, work=tmp_path / "jobs")
    running = asyncio.ensure_future(pool.run(job(tmp_path, SLOW.split("/"), "slow")))
    while pool.busy < 1 or not job_processes():
        await asyncio.sleep(0.05)
    waiting = asyncio.ensure_future(pool.run(job(tmp_path, ["resize=width:1"], "small")))
    await asyncio.sleep(0.2)
    assert pool.busy == 2 and not waiting.done()
    started = time.monotonic()
    await pool.close()
    results = await asyncio.gather(running, waiting, return_exceptions=True)
    assert time.monotonic() - started < 5
    assert isinstance(results[0], errors.InvalidImage)  # its process was killed
    assert isinstance(results[1], errors.ShuttingDown)
    assert job_processes() == []
    assert pool.busy == 0


async def test_closing_the_cache_stops_its_computations_in_flight(tmp_path: Path) -> None:
    cache = DerivativeCache(LocalProvider(tmp_path / "store"))
    stopped = asyncio.Event()

    async def endless() -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            stopped.set()

    waiter = asyncio.ensure_future(cache.once("key", endless))
    await asyncio.sleep(0.05)
    waiter.cancel()  # the client went away: the shielded computation goes on
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert not stopped.is_set()
    started = time.monotonic()
    await cache.close()
    assert stopped.is_set() and time.monotonic() - started < 1
