"""The scenarios of issue 5. Each runs its servers in alternating order, round after
round (A B C, B C A, C A B, ...) so that the machine's drift falls on every server
alike, and reports medians as ``Row``s."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import resource
import statistics
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import load
from bench.servers import BenchSwift, Nginx, Stowage, cpu_seconds

MiB = 1024 * 1024
HASH_TOOLS = ("md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum")


@dataclass
class Row:
    id: str
    scenario: str
    unit: str
    stowage: float | None
    nginx: float | None = None
    swift: float | None = None
    reference: float | None = None
    reference_label: str = ""
    target: str = ""
    met: bool | None = None
    peak_rss_mib: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Sizes:
    big: int  # the "1 GiB" file
    multipart: int  # the "10 MiB" upload
    wrk_seconds: float
    rounds: int
    slow_count: int
    slow_hold: float
    s3_big: int
    video_seconds: int = 10  # scenario 13's clip to convert (issue 27: 10 s of 720p)

    @classmethod
    def full(cls) -> Sizes:
        return cls(1024 * MiB, 10 * MiB, 5, 3, 1000, 10, 128 * MiB)

    @classmethod
    def quick(cls) -> Sizes:
        return cls(32 * MiB, 10 * MiB, 1, 1, 100, 3, 8 * MiB, video_seconds=2)


@dataclass
class Context:
    tmp: Path
    sizes: Sizes
    stowage: Stowage
    nginx: Nginx
    swift: BenchSwift
    key: str = ""
    secret: str = ""
    files: dict[str, Path] = field(default_factory=dict)
    handles: dict[str, str] = field(default_factory=dict)
    token: str = ""
    boundary: str = "stowagebenchboundary7d1a"

    def stowage_file(self, name: str) -> str:
        return f"{self.stowage.url}/api/file/{self.handles[name]}"

    def swift_headers(self) -> dict[str, str]:
        return {"X-Auth-Token": self.token}


def alternate(rounds: int, runs: dict[str, Callable[[], float]]) -> dict[str, list[float]]:
    names = list(runs)
    out: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            out[name].append(runs[name]())
    return out


def median(values: list[float]) -> float:
    return float(statistics.median(values))


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _peak(ctx: Context, fn: Callable[[], Row]) -> Row:
    ctx.stowage.reset_peak()
    before, _ = ctx.stowage.rss_mib()
    row = fn()
    _, peak = ctx.stowage.rss_mib()
    row.peak_rss_mib = round(peak, 1)
    row.extra["rss_before_mib"] = round(before, 1)
    row.extra["rss_growth_mib"] = round(peak - before, 1)
    return row


# -- preparation -------------------------------------------------------------------------


def prepare(ctx: Context) -> None:
    files = ctx.files
    files["small"] = _random_file(ctx.tmp / "f1k", 1024)
    files["big"] = _random_file(ctx.tmp / "fbig", ctx.sizes.big)
    files["multipart"] = _random_file(ctx.tmp / "fmid", ctx.sizes.multipart)
    files["form"] = _multipart_body(ctx, files["multipart"])
    files["s3big"] = _random_file(ctx.tmp / "fs3", ctx.sizes.s3_big)
    ctx.key, ctx.secret = ctx.stowage.create_app()
    for name in ("small", "big"):
        target = ctx.nginx.www / files[name].name
        target.hardlink_to(files[name])
        ctx.handles[name] = _stowage_store(ctx, files[name])
    prepare_swift(ctx)


def prepare_swift(ctx: Context) -> None:
    """Swift's copies of the files (again after Swift is started again: bench/peers.py)."""
    ctx.token = ctx.swift.get_token()
    ctx.swift.request("PUT", "bench")
    for name in ("small", "big"):
        status, *_ = load.curl(
            f"{ctx.swift.storage_url}/bench/{ctx.files[name].name}",
            method="PUT",
            upload=ctx.files[name],
            headers=ctx.swift_headers(),
        )
        assert status == 201, status


def _random_file(path: Path, size: int) -> Path:
    with path.open("wb") as out:
        block = _block()
        for offset in range(0, size, len(block)):
            out.write(block[: size - offset])
    return path


def _block() -> bytes:
    return os.urandom(MiB)


def _multipart_body(ctx: Context, source: Path) -> Path:
    path = ctx.tmp / "form.body"
    with path.open("wb") as out:
        out.write(
            f'--{ctx.boundary}\r\nContent-Disposition: form-data; name="fileUpload"; '
            'filename="upload.bin"\r\nContent-Type: application/octet-stream\r\n\r\n'.encode()
        )
        out.write(source.read_bytes())
        out.write(f"\r\n--{ctx.boundary}--\r\n".encode())
    return path


def _stowage_store(ctx: Context, path: Path) -> str:
    status, _, _, body = load.curl(
        f"{ctx.stowage.url}/api/store/S3?key={ctx.key}&filename={path.name}",
        method="POST",
        upload=path,
        headers={"Content-Type": "application/octet-stream"},
    )
    assert status == 200, body
    return str(json.loads(body)["handle"])


def _stowage_delete(ctx: Context, handle: str) -> None:
    status, *_ = load.curl(
        f"{ctx.stowage.url}/api/file/{handle}?key={ctx.key}",
        method="DELETE",
        headers={"Authorization": _basic(ctx.secret)},
    )
    assert status == 200, status


def _basic(secret: str) -> str:
    return "Basic " + base64.b64encode(f"app:{secret}".encode()).decode()


# -- (1) GET 1 KiB -----------------------------------------------------------------------


def get_small(ctx: Context) -> list[Row]:
    p99s: dict[str, list[float]] = {"stowage": [], "nginx": [], "swift": []}
    cpu: dict[str, list[float]] = {"stowage": [], "nginx": [], "swift": []}
    servers: dict[str, Stowage | Nginx | BenchSwift] = {
        "stowage": ctx.stowage,
        "nginx": ctx.nginx,
        "swift": ctx.swift,
    }

    def run(name: str, url: str, headers: dict[str, str] | None = None) -> Callable[[], float]:
        def go() -> float:
            before = cpu_seconds(servers[name].pids())
            res = load.wrk(url, seconds=ctx.sizes.wrk_seconds, connections=50, headers=headers)
            used = cpu_seconds(servers[name].pids()) - before
            _no_errors(name, res)
            p99s[name].append(res.p99_ms)
            cpu[name].append(used / max(1, res.requests) * 1e6)
            return res.rps

        return go

    def measure() -> Row:
        rates = alternate(
            ctx.sizes.rounds,
            {
                "stowage": run("stowage", ctx.stowage_file("small")),
                "nginx": run("nginx", f"{ctx.nginx.url}/f1k"),
                "swift": run("swift", f"{ctx.swift.storage_url}/bench/f1k", ctx.swift_headers()),
            },
        )
        s, n, w = (median(rates[k]) for k in ("stowage", "nginx", "swift"))
        p99 = {k: median(v) for k, v in p99s.items()}
        cpu_us = {k: median(v) for k, v in cpu.items()}
        return Row(
            "1",
            "GET 1 KiB by handle, 50 connections",
            "req/s",
            s,
            n,
            w,
            target=">= 0.10x nginx and >= 3x Swift",
            met=s >= 0.10 * n and s >= 3 * w,
            extra={"p99_ms": p99, "cpu_us_per_request": cpu_us, "runs": rates},
        )

    row = _peak(ctx, measure)
    p99, cpu_us = row.extra["p99_ms"], row.extra["cpu_us_per_request"]
    latency = Row("1", "  p99 latency of the above", "ms", *p99.values())
    cost = Row(
        "1",
        "  server CPU time per request (all its processes; independent of other load)",
        "us",
        *cpu_us.values(),
    )
    return [row, latency, cost]


def _no_errors(name: str, res: load.WrkResult) -> None:
    """``name``: the peer, or the URL it was measured on (bench/peers.py restarts it)."""
    if res.errors:
        raise load.PeerFailed(name, f"{res.errors} errors in {res.requests} requests")


# -- (2) GET 1 GiB, (3) Range ------------------------------------------------------------


def get_big(ctx: Context) -> list[Row]:
    size = ctx.sizes.big

    def run(url: str, headers: dict[str, str] | None = None) -> Callable[[], float]:
        def go() -> float:
            status, got, seconds, _ = load.curl(url, headers=headers)
            if status != 200 or got != size:  # the URL names the peer to start again
                raise load.PeerFailed(url, f"HTTP {status}, {got} of {size} bytes")
            return size / seconds / 1e6

        return go

    def measure() -> Row:
        rates = alternate(
            ctx.sizes.rounds,
            {
                "stowage": run(ctx.stowage_file("big")),
                "nginx": run(f"{ctx.nginx.url}/fbig"),
                "swift": run(f"{ctx.swift.storage_url}/bench/fbig", ctx.swift_headers()),
            },
        )
        s, n, w = (median(rates[k]) for k in ("stowage", "nginx", "swift"))
        return Row(
            "2",
            f"GET {_size(size)} file, 1 stream (curl)",
            "MB/s",
            s,
            n,
            w,
            target=">= 0.90x nginx",
            met=s >= 0.9 * n,
            extra={"runs": rates},
        )

    return [_peak(ctx, measure)]


def get_range(ctx: Context) -> list[Row]:
    middle = ctx.sizes.big // 2
    span = {"Range": f"bytes={middle}-{middle + MiB - 1}"}

    def run(url: str, headers: dict[str, str] | None = None) -> Callable[[], float]:
        def go() -> float:
            res = load.wrk(
                url,
                seconds=ctx.sizes.wrk_seconds,
                connections=8,
                headers={**span, **(headers or {})},
            )
            _no_errors(url, res)
            return res.rps

        return go

    def measure() -> Row:
        rates = alternate(
            ctx.sizes.rounds,
            {
                "stowage": run(ctx.stowage_file("big")),
                "nginx": run(f"{ctx.nginx.url}/fbig"),
                "swift": run(f"{ctx.swift.storage_url}/bench/fbig", ctx.swift_headers()),
            },
        )
        s, n, w = (median(rates[k]) for k in ("stowage", "nginx", "swift"))
        return Row(
            "3",
            f"Range GET 1 MiB in the middle of {_size(ctx.sizes.big)}, 8 connections",
            "req/s",
            s,
            n,
            w,
            target=">= 0.50x nginx",
            met=s >= 0.5 * n,
            extra={"runs": rates},
        )

    return [_peak(ctx, measure)]


# -- (4) store 1 GiB, (5) store 1 KiB, (6) multipart -------------------------------------


def store_big(ctx: Context) -> list[Row]:
    big = ctx.files["big"]
    size = ctx.sizes.big
    cpu: dict[str, list[float]] = {"stowage": [], "nginx": [], "swift": [], "disk": []}

    def stowage() -> float:
        warm(big)
        before = cpu_seconds(ctx.stowage.pids())
        started = time.perf_counter()
        handle = _stowage_store(ctx, big)
        seconds = time.perf_counter() - started
        cpu["stowage"].append((cpu_seconds(ctx.stowage.pids()) - before) / (size / GiB))
        _stowage_delete(ctx, handle)
        return size / seconds / 1e6

    def nginx() -> float:
        warm(big)
        before = cpu_seconds(ctx.nginx.pids())
        status, _, seconds, _ = load.curl(f"{ctx.nginx.url}/up/big", method="PUT", upload=big)
        cpu["nginx"].append((cpu_seconds(ctx.nginx.pids()) - before) / (size / GiB))
        assert status in (201, 204), status
        (ctx.nginx.www / "up" / "big").unlink()
        return size / seconds / 1e6

    def swift() -> float:
        warm(big)
        url = f"{ctx.swift.storage_url}/bench/upload-big"
        before = cpu_seconds(ctx.swift.pids())
        status, _, seconds, _ = load.curl(
            url, method="PUT", upload=big, headers=ctx.swift_headers()
        )
        cpu["swift"].append((cpu_seconds(ctx.swift.pids()) - before) / (size / GiB))
        assert status == 201, status
        ctx.swift.request("DELETE", "bench/upload-big")
        return size / seconds / 1e6

    def disk() -> float:
        # The same page-cached source as curl reads, to the same file system as Stowage's.
        warm(big)
        seconds, used = dd_fsync([big], ctx.tmp)
        cpu["disk"].append(used / (size / GiB))
        return size / seconds / 1e6

    def measure() -> Row:
        rates = alternate(
            ctx.sizes.rounds, {"stowage": stowage, "nginx": nginx, "swift": swift, "disk": disk}
        )
        s, n, w, d = (median(rates[k]) for k in ("stowage", "nginx", "swift", "disk"))
        return Row(
            "4",
            f"store {_size(size)} raw body, durable (fsync; nginx does not fsync)",
            "MB/s",
            s,
            n,
            w,
            reference=d,
            reference_label="disk: dd conv=fsync of the same cached file",
            target=">= 0.8x dd conv=fsync",
            met=s >= 0.8 * d,
            extra={"runs": rates, "cpu_s_per_gib": cpu},
        )

    row = _peak(ctx, measure)
    growth = row.extra["rss_growth_mib"]
    memory = Row(
        "4",
        "  peak RSS growth during the above",
        "MiB",
        growth,
        target="< 64 MiB",
        met=growth < 64,
    )
    return [row, cpu_row("4", cpu), memory]


GiB = 1024 * MiB


def warm(path: Path) -> None:
    """Reads ``path`` once, so that every sender reads it from the page cache."""
    with path.open("rb") as f:
        while f.read(8 * MiB):
            pass


def dd_fsync(sources: list[Path], folder: Path) -> tuple[float, float]:
    """``dd conv=fsync`` of each source at once into ``folder``: (seconds, CPU seconds)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    outs = [folder / f"dd-{n}.out" for n in range(len(sources))]
    procs = [
        subprocess.Popen(["dd", f"if={src}", f"of={out}", "bs=1M", "conv=fsync", "status=none"])
        for src, out in zip(sources, outs, strict=True)
    ]
    assert all(p.wait() == 0 for p in procs)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    for out in outs:
        out.unlink()
    used = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return seconds, used


def cpu_row(sid: str, cpu: dict[str, list[float]]) -> Row:
    """Server CPU seconds per GiB stored (all its processes), dd's own beside it."""
    med = {k: median(v) if v else None for k, v in cpu.items()}
    return Row(
        sid,
        "  server CPU seconds per GiB stored (all its processes)",
        "s/GiB",
        med.get("stowage"),
        med.get("nginx"),
        med.get("swift"),
        reference=med.get("disk"),
        reference_label="dd's own CPU" if "disk" in med else "",
        target="<= 1.5 s/GiB",
        met=med["stowage"] is not None and med["stowage"] <= 1.5,
    )


def store_small(ctx: Context) -> list[Row]:
    small = ctx.files["small"]
    octet = {"Content-Type": "application/octet-stream"}

    def run(url: str, method: str, unique: bool, headers: dict[str, str]) -> Callable[[], float]:
        def go() -> float:
            res = load.wrk(
                url,
                seconds=min(ctx.sizes.wrk_seconds, 3),
                connections=16,
                headers=headers,
                body=small,
                method=method,
                unique=unique,
                lua_dir=ctx.tmp,
            )
            _no_errors(url, res)
            return res.rps

        return go

    def measure() -> Row:
        tag = f"r{time.monotonic_ns()}-"
        rates = alternate(
            ctx.sizes.rounds,
            {
                "stowage": run(
                    f"{ctx.stowage.url}/api/store/S3?key={ctx.key}", "POST", False, octet
                ),
                "nginx": run(f"{ctx.nginx.url}/up/s/{tag}", "PUT", True, octet),
                "swift": run(
                    f"{ctx.swift.storage_url}/bench/s/{tag}",
                    "PUT",
                    True,
                    {**octet, **ctx.swift_headers()},
                ),
            },
        )
        s, n, w = (median(rates[k]) for k in ("stowage", "nginx", "swift"))
        return Row(
            "5",
            "store 1 KiB raw body, a new file each, 16 connections (Stowage, Swift: fsync)",
            "req/s",
            s,
            n,
            w,
            target=">= 2x Swift",
            met=s >= 2 * w,
            extra={"runs": rates},
        )

    return [_peak(ctx, measure)]


def store_multipart(ctx: Context) -> list[Row]:
    raw = ctx.files["multipart"]
    size = ctx.sizes.multipart
    form = {"Content-Type": f"multipart/form-data; boundary={ctx.boundary}"}
    cpu: dict[str, list[float]] = {"stowage": [], "nginx": [], "swift": [], "disk": []}
    servers: dict[str, Stowage | Nginx | BenchSwift] = {
        "stowage": ctx.stowage,
        "nginx": ctx.nginx,
        "swift": ctx.swift,
    }

    def run(
        name: str, url: str, body: Path, method: str, headers: dict[str, str] | None = None
    ) -> Callable[[], float]:
        def go() -> float:
            warm(body)
            before = cpu_seconds(servers[name].pids())
            res = load.wrk(
                url,
                seconds=max(ctx.sizes.wrk_seconds, 2),
                connections=4,
                headers=headers,
                body=body,
                method=method,
                lua_dir=ctx.tmp,
            )
            used = cpu_seconds(servers[name].pids()) - before
            _no_errors(url, res)
            cpu[name].append(used / max(1, res.requests * size / GiB))
            return res.rps * size / 1e6

        return go

    def disk() -> float:
        """Four ``dd conv=fsync`` of the same cached file at once, as four connections."""
        warm(raw)
        rounds = 4
        seconds = used = 0.0
        for _ in range(rounds):
            took, cost = dd_fsync([raw] * 4, ctx.tmp)
            seconds, used = seconds + took, used + cost
        cpu["disk"].append(used / (rounds * 4 * size / GiB))
        return rounds * 4 * size / seconds / 1e6

    def measure() -> Row:
        store = f"{ctx.stowage.url}/api/store/S3?key={ctx.key}"
        rates = alternate(
            ctx.sizes.rounds,
            {
                "stowage": run("stowage", store, ctx.files["form"], "POST", form),
                "nginx": run("nginx", f"{ctx.nginx.url}/up/mid", raw, "PUT"),
                "swift": run(
                    "swift", f"{ctx.swift.storage_url}/bench/mid", raw, "PUT", ctx.swift_headers()
                ),
                "disk": disk,
            },
        )
        s, n, w, d = (median(rates[k]) for k in ("stowage", "nginx", "swift", "disk"))
        return Row(
            "6",
            f"multipart fileUpload {_size(size)}, 4 connections (nginx, Swift: raw PUT)",
            "MB/s",
            s,
            n,
            w,
            reference=d,
            reference_label="disk: 4 x dd conv=fsync of the same cached file",
            target=">= 0.35x nginx raw PUT, memory flat",
            extra={"runs": rates, "cpu_s_per_gib": cpu},
        )

    row = _peak(ctx, measure)
    growth = row.extra["rss_growth_mib"]
    row.met = row.stowage is not None and row.nginx is not None
    row.met = row.met and row.stowage >= 0.35 * row.nginx and growth < 64  # type: ignore[operator]
    return [row, cpu_row("6", cpu)]


# -- (7) hashes --------------------------------------------------------------------------


def hashes(ctx: Context) -> list[Row]:
    selectors = "&".join(f"{t.removesuffix('sum')}=true" for t in HASH_TOOLS)
    url = f"{ctx.stowage_file('big')}/metadata?{selectors}"
    big = ctx.files["big"]

    def stowage() -> float:
        started = time.perf_counter()
        status, _, _, _ = load.curl(url)
        assert status == 200, status
        return time.perf_counter() - started

    def tools() -> float:
        started = time.perf_counter()
        for tool in HASH_TOOLS:
            subprocess.run([tool, str(big)], check=True, capture_output=True)
        return time.perf_counter() - started

    def measure() -> Row:
        times = alternate(max(1, min(ctx.sizes.rounds, 2)), {"stowage": stowage, "tools": tools})
        s, t = median(times["stowage"]), median(times["tools"])
        return Row(
            "7",
            f"metadata with six hashes of {_size(ctx.sizes.big)}, one request",
            "s",
            s,
            reference=t,
            reference_label="md5sum..sha512sum in turn",
            target="<= 0.7x the six tools",
            met=s <= 0.7 * t,
            extra={"runs": times},
        )

    return [_peak(ctx, measure)]


# -- (8) slow downloads ------------------------------------------------------------------


def slow(ctx: Context) -> list[Row]:
    count, hold = ctx.sizes.slow_count, ctx.sizes.slow_hold
    seconds = max(1.0, hold - 4)

    def rate_and_cost(url: str, pids: list[int]) -> tuple[float, float]:
        before = cpu_seconds(pids)
        res = load.wrk(url, seconds=seconds, connections=50)
        _no_errors(url, res)
        return res.rps, (cpu_seconds(pids) - before) / max(1, res.requests) * 1e6

    def under_load(big_url: str, small_url: str, pids: list[int]) -> dict[str, Any]:
        """Alone, with the slow downloads, alone again: the two alone runs bracket the
        loaded one, so a linear drift of the machine cancels."""
        before = rate_and_cost(small_url, pids)
        connected = [0]
        box: list[load.SlowResult] = []
        thread = threading.Thread(
            target=lambda: box.append(
                asyncio.run(load.slow_downloads(big_url, count, hold, connected))
            )
        )
        thread.start()
        deadline = time.monotonic() + 3
        while connected[0] < count and time.monotonic() < deadline and thread.is_alive():
            time.sleep(0.05)
        during = rate_and_cost(small_url, pids)
        thread.join()
        after = rate_and_cost(small_url, pids)
        return {
            "alone": (before[0] + after[0]) / 2,
            "during": during[0],
            "cpu_us_alone": (before[1] + after[1]) / 2,
            "cpu_us_during": during[1],
            "errors": box[0].errors,
            "slow_bytes": box[0].bytes_read,
        }

    def measure() -> Row:
        s = under_load(ctx.stowage_file("big"), ctx.stowage_file("small"), ctx.stowage.pids())
        n = under_load(f"{ctx.nginx.url}/fbig", f"{ctx.nginx.url}/f1k", ctx.nginx.pids())
        return Row(
            "8",
            f"GET 1 KiB rate while {count} slow downloads are held open {hold:g} s",
            "req/s",
            s["during"],
            n["during"],
            reference=s["alone"],
            reference_label="Stowage's own rate, alone, before and after",
            target="0 errors; >= 0.8x its own rate",
            met=s["errors"] == 0 and s["during"] >= 0.8 * s["alone"],
            extra={"stowage": s, "nginx": n},
        )

    row = _peak(ctx, measure)
    s, n = row.extra["stowage"], row.extra["nginx"]
    errors = Row(
        "8",
        f"  errors among the {count} slow downloads",
        "count",
        s["errors"],
        n["errors"],
        target="0",
        met=s["errors"] == 0,
    )
    cost = Row(
        "8",
        "  server CPU time per 1 KiB request during the above",
        "us",
        s["cpu_us_during"],
        n["cpu_us_during"],
        reference=s["cpu_us_alone"],
        reference_label="Stowage alone",
    )
    return [row, errors, cost]


def _size(size: int) -> str:
    return f"{size // (1024 * MiB)} GiB" if size >= 1024 * MiB else f"{size // MiB} MiB"
