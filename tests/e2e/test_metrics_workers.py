"""``/metrics`` of ``stowage serve --workers N`` reports the sum over all workers, whichever
worker answers the scrape (prometheus_client's multiprocess mode)."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import aiohttp
import pytest

from tests.e2e.test_observe import sample
from tests.e2e.test_workers import _wait_for_workers
from tests.servers.procs import children
from tests.servers.stowage_serve import StowageServe

REQUESTS = 40


def _metric_files(pids: list[int]) -> dict[int, set[Path]]:
    """The value files each worker has mapped (in the run's private metrics directory)."""
    found: dict[int, set[Path]] = {}
    for pid in pids:
        maps = Path(f"/proc/{pid}/maps").read_text()
        found[pid] = {Path(p) for p in re.findall(r"(/\S*stowage-metrics-\S+\.db)", maps)}
    return found


async def _get(url: str) -> tuple[int, str]:
    # A fresh connection each, so that the kernel spreads them over the workers.
    async with aiohttp.ClientSession() as own, own.get(url) as resp:
        return resp.status, await resp.text()


@pytest.mark.parametrize("workers", [2, 4])
async def test_every_scrape_counts_the_requests_of_all_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    srv = StowageServe(tmp_path / "data")
    json.loads(srv.cli("apps", "create", "--json"))
    monkeypatch.setenv("STOWAGE_WORKERS", str(workers))
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path / "stale"))  # ignored
    srv.start()
    try:
        assert srv.proc is not None
        await _wait_for_workers(srv.proc.pid, workers)
        results = await asyncio.gather(*(_get(f"{srv.api}/healthz") for _ in range(REQUESTS)))
        assert [status for status, _ in results] == [200] * REQUESTS
        files = _metric_files(children(srv.proc.pid))
        served = [pid for pid, paths in files.items() if any("counter_" in p.name for p in paths)]
        assert len(served) >= 2, files  # the requests really were spread over the workers
        directory = next(iter(next(p for p in files.values() if p))).parent
        assert directory.stat().st_mode & 0o777 == 0o700
        assert directory.parent != tmp_path and not (tmp_path / "stale").exists()

        for _ in range(4 * workers):  # several scrapes, answered by different workers
            status, text = await _get(f"{srv.api}/metrics")
            assert status == 200
            assert sample(text, "stowage_http_requests_total", route="/healthz") == REQUESTS
            count = "stowage_http_request_duration_seconds_count"
            assert sample(text, count, route="/healthz") == REQUESTS
            bucket = "stowage_http_request_duration_seconds_bucket"
            le = sample(text, bucket, route="/healthz", le="+Inf")
            assert le == REQUESTS
            assert sample(text, "stowage_http_requests_in_flight") == 1  # this scrape
            assert sample(text, "stowage_uploads_in_progress") == 0
            assert len(re.findall(r"^stowage_webhook_queue_depth ", text, re.M)) == 1
            assert sample(text, "stowage_webhook_queue_depth") == 0
        assert srv.stop() == 0
        assert not directory.exists()  # removed with the run
    finally:
        if srv.proc is not None and srv.proc.poll() is None:
            srv.kill()
