"""Shows that a large upload and download through the API keep the server's memory flat.

Starts a real ``stowage serve`` on loopback, streams SIZE MiB of generated data to
``POST /api/store/S3`` and reads it back from ``GET /api/file/<handle>``, and prints
the server's peak RSS (VmHWM) before and after, with throughput.

    .venv/bin/python bench/memory.py            # 1 GiB
    .venv/bin/python bench/memory.py --mib 64   # quick
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.servers.stowage_serve import StowageServe

MiB = 1024 * 1024


async def generated(total_mib: int, digest: hashlib._Hash) -> AsyncIterator[bytes]:
    block = os.urandom(MiB)
    for _ in range(total_mib):
        digest.update(block)
        yield block


async def run(total_mib: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="stowage-bench-") as tmp:
        srv = StowageServe(Path(tmp) / "data")
        key = json.loads(srv.cli("apps", "create", "--json"))["api_key"]
        srv.start()
        try:
            idle = srv.peak_rss_kib() / 1024
            sent = hashlib.sha256()
            timeout = aiohttp.ClientTimeout(total=None)
            async with aiohttp.ClientSession(timeout=timeout) as http:
                started = time.perf_counter()
                resp = await http.post(
                    f"{srv.api}/api/store/S3",
                    params={"key": key},
                    data=generated(total_mib, sent),
                )
                stored = await resp.json()
                upload_s = time.perf_counter() - started
                after_upload = srv.peak_rss_kib() / 1024
                got = hashlib.sha256()
                started = time.perf_counter()
                async with http.get(f"{srv.api}/api/file/{stored['handle']}") as download:
                    async for chunk in download.content.iter_chunked(MiB):
                        got.update(chunk)
                download_s = time.perf_counter() - started
            assert got.hexdigest() == sent.hexdigest(), "downloaded bytes differ"
            peak = srv.peak_rss_kib() / 1024
        finally:
            srv.stop()
    return {
        "size_mib": total_mib,
        "idle_peak_rss_mib": round(idle, 1),
        "peak_rss_after_upload_mib": round(after_upload, 1),
        "peak_rss_after_download_mib": round(peak, 1),
        "growth_mib": round(peak - idle, 1),
        "upload_mb_s": round(total_mib * MiB / upload_s / 1e6),
        "download_mb_s": round(total_mib * MiB / download_s / 1e6),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=1024, help="file size in MiB (default 1024)")
    args = parser.parse_args()
    result = asyncio.run(run(args.mib))
    for name, value in result.items():
        print(f"{name:30} {value}")


if __name__ == "__main__":
    main()
