"""The edge cache tier (issue 16): Varnish with deploy/varnish/stowage.vcl in front of a
Stowage CDN origin configured to purge it (``edge_cache_urls``).

- (1c) GET 1 KiB by handle through the cache (hits), 50 connections, against nginx
  serving the same file.
- (2c) GET the big file through the cache tier against the origin directly: larger than
  ``edge_max_object_bytes``, so it streams through without being stored; the cache's
  peak memory growth is reported.
- (10) purge: after each overwrite's answer, one read through the cache must already get
  the new content (stale reads: must be 0); the time each write spent purging, p99, from
  the origin's ``stowage_edge_purge_seconds`` histogram (upper bucket bound).
"""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench import load
from bench.scenarios import Context, MiB, Row, _basic, _no_errors, _size, alternate, median
from bench.servers import Stowage
from tests.servers.varnish import Varnish

#: Below the quick run's 32 MiB "big" file, so that it passes through in both modes.
MAX_OBJECT = 16 * MiB


@dataclass
class Tier:
    origin: Stowage
    cache: Varnish
    key: str
    secret: str
    small: str  # handle
    big: str

    def stop(self) -> None:
        self.cache.stop()
        self.origin.stop()


_TIERS: dict[int, Tier] = {}


def tier(ctx: Context) -> Tier:
    """One origin (one worker: its /metrics are the whole node's) and one cache."""
    if id(ctx) in _TIERS:
        return _TIERS[id(ctx)]
    root = ctx.tmp / "edge"
    root.mkdir(exist_ok=True)
    origin = Stowage(root, 1)
    cache = Varnish(backend_port=origin.cdn_port, memory="512m")
    origin.extra_env = {
        "STOWAGE_EDGE_CACHE_URLS": cache.url,
        "STOWAGE_EDGE_MAX_OBJECT_BYTES": str(MAX_OBJECT),
    }
    origin.start()
    cache.start()
    key, secret = origin.create_app()
    made = Tier(origin, cache, key, secret, "", "")
    made.small = _store(made, ctx.files["small"])
    made.big = _store(made, ctx.files["big"])
    _TIERS[id(ctx)] = made
    return made


def stop_all() -> None:
    for made in _TIERS.values():
        made.stop()
    _TIERS.clear()


def _store(t: Tier, path: Path) -> str:
    status, _, _, body = load.curl(
        f"{t.origin.url}/api/store/S3?key={t.key}&filename={path.name}",
        method="POST",
        upload=path,
        headers={"Content-Type": "application/octet-stream"},
    )
    assert status == 200, body
    return str(json.loads(body)["handle"])


def get_small_cached(ctx: Context) -> list[Row]:
    t = tier(ctx)
    url = f"{t.cache.url}/{t.small}"
    assert load.curl(url)[0] == 200  # the miss that fills the cache

    def run(target: str) -> Callable[[], float]:
        def go() -> float:
            res = load.wrk(target, seconds=ctx.sizes.wrk_seconds, connections=50)
            _no_errors(target, res)
            return res.rps

        return go

    rates = alternate(
        ctx.sizes.rounds,
        {
            "cache": run(url),
            "nginx": run(f"{ctx.nginx.url}/f1k"),
            "origin": run(f"http://127.0.0.1:{t.origin.cdn_port}/{t.small}"),
        },
    )
    c, n, o = (median(rates[k]) for k in ("cache", "nginx", "origin"))
    return [
        Row(
            "1c",
            "GET 1 KiB by handle through the edge cache (hits), 50 connections",
            "req/s",
            c,
            n,
            reference=o,
            reference_label="the origin directly, 1 worker",
            target=">= 0.50x nginx",
            met=c >= 0.5 * n,
            extra={"runs": rates},
        )
    ]


def get_big_through(ctx: Context) -> list[Row]:
    t = tier(ctx)
    size = ctx.sizes.big
    growth: list[float] = []

    def run(url: str, through_cache: bool) -> Callable[[], float]:
        def go() -> float:
            before = _reset_peak(t.cache) if through_cache else 0
            status, got, seconds, _ = load.curl(url)
            assert status == 200 and got == size, (status, got)
            if through_cache:
                growth.append((_peak(t.cache) - before) / MiB)
            return size / seconds / 1e6

        return go

    rates = alternate(
        ctx.sizes.rounds,
        {
            "cache": run(f"{t.cache.url}/{t.big}", True),
            "origin": run(f"http://127.0.0.1:{t.origin.cdn_port}/{t.big}", False),
        },
    )
    c, o = median(rates["cache"]), median(rates["origin"])
    return [
        Row(
            "2c",
            f"GET {_size(size)} file through the edge cache (streamed, not stored), 1 stream",
            "MB/s",
            c,
            reference=o,
            reference_label="the origin directly",
            target=">= 0.90x the origin",
            met=c >= 0.9 * o,
            extra={"runs": rates},
        ),
        Row(
            "2c",
            "  cache (varnishd) peak RSS growth during the above",
            "MiB",
            max(growth),
            target=f"well under {_size(size)}",
            met=max(growth) * MiB < size / 4,
        ),
    ]


def purge_latency(ctx: Context) -> list[Row]:
    t = tier(ctx)
    writes = 200 if ctx.sizes.rounds == 1 else 500
    url = f"{t.cache.url}/{t.small}"
    auth = {"Authorization": _basic(t.secret), "Content-Type": "text/plain"}
    stale = 0
    body = ctx.tmp / "edge-overwrite"
    for n in range(writes):
        content = f"version {n}".encode()
        body.write_bytes(content)
        assert load.curl(url)[0] == 200  # stored in the cache before the write
        status, *_ = load.curl(
            f"{t.origin.url}/api/file/{t.small}", method="POST", upload=body, headers=auth
        )
        assert status == 200, status
        with urllib.request.urlopen(url, timeout=10) as resp:
            stale += resp.read() != content
    p99, mean, buckets = _purge_p99(t)
    return [
        Row(
            "10",
            f"reads through the cache right after an overwrite's answer that got the old "
            f"file ({writes} writes)",
            "count",
            stale,
            target="0",
            met=stale == 0,
        ),
        Row(
            "10",
            f"  write's time spent purging, p99 (upper bucket bound; mean {mean * 1000:.2f} ms)",
            "ms",
            p99 * 1000,
            target="< 5 ms",
            met=p99 < 0.005,
            extra={"cumulative_buckets_seconds": buckets},
        ),
    ]


def _purge_p99(t: Tier) -> tuple[float, float, list[tuple[float, float]]]:
    with urllib.request.urlopen(f"{t.origin.url}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    buckets = [
        (float(m[1]), float(m[2]))
        for m in re.finditer(r'stowage_edge_purge_seconds_bucket\{le="([0-9.]+)"\} (\S+)', text)
    ]
    total = float(re.search(r"stowage_edge_purge_seconds_count (\S+)", text)[1])  # type: ignore[index]
    seconds = float(re.search(r"stowage_edge_purge_seconds_sum (\S+)", text)[1])  # type: ignore[index]
    p99 = next((bound for bound, count in buckets if count >= 0.99 * total), float("inf"))
    return p99, seconds / max(total, 1), buckets


def _cache_pids(cache: Varnish) -> list[int]:
    assert cache.proc is not None
    pids = []
    for child in Path(f"/proc/{cache.proc.pid}/task").glob("*/children"):
        pids += [int(p) for p in child.read_text().split()]
    return pids


def _status(pid: int, name: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(name + ":"):
            return int(line.split()[1]) * 1024
    return 0


def _reset_peak(cache: Varnish) -> int:
    for pid in _cache_pids(cache):
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    return sum(_status(pid, "VmRSS") for pid in _cache_pids(cache))


def _peak(cache: Varnish) -> int:
    return sum(_status(pid, "VmHWM") for pid in _cache_pids(cache))


__all__ = ["get_big_through", "get_small_cached", "purge_latency", "stop_all"]
