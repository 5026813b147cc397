"""Scenario 11 (issue 15): image transformations on the CDN, against Thumbor.

(a) cold: a different 12-megapixel JPEG each request, resized to a 300-px-wide WebP,
    8 connections, Stowage against Thumbor (2 processes, file loader, no result storage);
(b) warm: the same derivative again (a cache hit) against a plain CDN GET of a file of
    the derivative's size;
(c) peak RSS growth of the Stowage server while it resizes a 100-megapixel JPEG, or
    refuses it by its pixel limit;
and the floor: the CPU of (a)'s decode, resize and encode alone, outside any server.

Before the processing engine exists every transformation URL is answered 400: the rows
then carry no Stowage figure and say so in their name and in ``extra["engine"]``; the
Thumbor side is measured all the same.
"""

from __future__ import annotations

import asyncio
import io
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import PIL.Image
import pyvips

from bench import images, load, processing_tasks
from bench.cdnclient import CONNECTIONS, cdn, fetch_all
from bench.scenarios import (
    Context,
    Row,
    _peak,
    _random_file,
    _stowage_store,
    alternate,
    median,
)
from bench.servers import Stowage, cpu_seconds
from bench.thumbor import Thumbor, thumbor_version

WIDTH = 300
CHAIN = f"resize=width:{WIDTH}/output=format:webp"
FLOOR_SOURCES = 8


@dataclass
class Engine:
    """What the probe learnt: whether Stowage transforms images at all."""

    present: bool
    status: int
    detail: str

    def label(self) -> str:
        return "" if self.present else f" [Stowage: no processing engine, {self.detail}]"


def transform_url(stowage: Stowage, handle: str, chain: str = CHAIN) -> str:
    return f"{cdn(stowage)}/{chain}/{handle}"


def processing(ctx: Context) -> list[Row]:
    work = ctx.tmp / "processing"
    per_run = 4 if ctx.sizes.rounds == 1 else 40  # the per-task rows'
    # 120 cold requests a run: CPU is read in 10-ms ticks, 0.08 ms a request.
    cold_per_run = 8 if ctx.sizes.rounds == 1 else 120
    # One more than the runs use: the first is the probe's, then the warm scenario's.
    paths = images.sources(work / "sources", cold_per_run * ctx.sizes.rounds + 1)
    handles = [_stowage_store(ctx, path) for path in paths]
    thumbor = Thumbor(work / "thumbor")
    thumbor.images.mkdir(parents=True)
    for path in paths:
        (thumbor.images / path.name).hardlink_to(path)
    engine = probe(ctx.stowage, handles[0])
    thumbor.start()
    try:
        check_thumbor(thumbor, paths[0].name)
        warm_up(ctx.stowage, thumbor, engine, handles[0], paths[0].name)
        urls = {
            "stowage": [transform_url(ctx.stowage, h) for h in handles[1:]],
            "thumbor": [thumbor.resize_url(p.name) for p in paths[1:]],
        }
        rows = cold(ctx, thumbor, engine, urls, cold_per_run)
        rows.append(warm(ctx, engine, handles[0]))
        rows.append(bomb(ctx, thumbor, engine, images.large(work / "large.jpg")))
        if engine.present:  # issue 23: per task, and auto_image warm
            rows += processing_tasks.tasks(ctx, thumbor, per_run)
            rows.append(processing_tasks.warm_auto_image(ctx, handles[0]))
    finally:
        thumbor.stop()
    rows.append(floor(paths[1 : 1 + FLOOR_SOURCES], rows[1].reference))
    return rows


async def _get(url: str) -> tuple[int, str, bytes]:
    async with aiohttp.ClientSession() as http, http.get(url) as resp:
        return resp.status, resp.headers.get("Content-Type", ""), await resp.read()


def probe(stowage: Stowage, handle: str) -> Engine:
    """One transformation of a 12-megapixel source: a WebP 300 px wide, or no engine."""
    status, ctype, body = asyncio.run(_get(transform_url(stowage, handle)))
    if status == 200 and ctype.startswith("image/webp"):
        width, _, loader = images.geometry(body)
        if width == WIDTH and loader.startswith("webp"):
            return Engine(True, status, "")
        return Engine(False, status, f"answered a {width}-px {loader}")
    try:
        code = str(json.loads(body)["error"]["code"])
    except (ValueError, KeyError, TypeError):
        code = body[:60].decode(errors="replace")
    return Engine(False, status, f"answered {status} {code}")


def check_thumbor(thumbor: Thumbor, name: str) -> None:
    status, ctype, body = asyncio.run(_get(thumbor.resize_url(name)))
    assert status == 200 and ctype.startswith("image/webp"), (status, ctype)
    width, _, loader = images.geometry(body)
    assert width == WIDTH and loader.startswith("webp"), (width, loader)


def warm_up(stowage: Stowage, thumbor: Thumbor, engine: Engine, handle: str, name: str) -> None:
    """Requests on the probe's source before measuring, twice the connections for each
    server, so that every process of both has started and loaded its image code: the
    runs measure the steady state. Stowage starts a job process on first use, per slot
    of each worker; with a request per slot, one worker may get most of them and the
    other start its second process during the first run (about 4 ms a request more in
    that run). Stowage's use other widths: each is a miss, and none touches the sources
    the cold runs use."""
    count = 2 * CONNECTIONS
    asyncio.run(fetch_all([thumbor.resize_url(name)] * count, CONNECTIONS))
    if engine.present:
        chains = (f"resize=width:{WIDTH - 1 - i}/output=format:webp" for i in range(count))
        urls = [transform_url(stowage, handle, chain) for chain in chains]
        asyncio.run(fetch_all(urls, CONNECTIONS))


def cold(
    ctx: Context, thumbor: Thumbor, engine: Engine, urls: dict[str, list[str]], per_run: int
) -> list[Row]:
    """Each run takes the next ``per_run`` URLs of its server: no source is asked twice."""
    done = {name: 0 for name in urls}
    retried = {name: 0 for name in urls}
    pids = {"stowage": ctx.stowage.pids, "thumbor": thumbor.pids}
    cpu_ms: dict[str, list[float]] = {name: [] for name in urls}

    def run(name: str) -> Callable[[], float]:
        def go() -> float:
            batch = urls[name][done[name] : done[name] + per_run]
            done[name] += per_run
            before = cpu_seconds(pids[name]())
            rate, statuses, busy = asyncio.run(fetch_all(batch, CONNECTIONS))
            cpu_ms[name].append((cpu_seconds(pids[name]()) - before) * 1000 / len(batch))
            retried[name] += busy
            bad = [s for s in statuses if s != 200]
            if bad:
                raise RuntimeError(f"{name}: {len(bad)} of {len(batch)} answered {bad[:3]}")
            return rate

        return go

    runs = {"thumbor": run("thumbor")}
    if engine.present:
        runs["stowage"] = run("stowage")

    def measure() -> Row:
        rates = alternate(ctx.sizes.rounds, runs)
        s = median(rates["stowage"]) if engine.present else None
        t = median(rates["thumbor"])
        return Row(
            "11",
            f"cold: 12 MP JPEG -> {WIDTH} px WebP, a new source each request, "
            f"{CONNECTIONS} connections{engine.label()}",
            "req/s",
            s,
            reference=t,
            reference_label=f"Thumbor {thumbor_version()}, {thumbor.processes} processes",
            target=">= 1.5x Thumbor",
            met=None if s is None else s >= 1.5 * t,
            extra={
                "runs": rates,
                "engine": _engine(engine),
                "requests_per_run": per_run,
                "503s": retried,
            },
        )

    return [_peak(ctx, measure), _cpu_row(engine, cpu_ms)]


def _cpu_row(engine: Engine, cpu_ms: dict[str, list[float]]) -> Row:
    """CPU per transformation: unlike req/s it does not depend on how Thumbor's two
    processes happen to share the 8 connections (tornado's accept is not balanced)."""
    s = median(cpu_ms["stowage"]) if engine.present else None
    return Row(
        "11",
        "  server CPU time per transformation (all its processes; lower is better)",
        "ms",
        s,
        reference=median(cpu_ms["thumbor"]),
        reference_label="Thumbor, the same requests",
        extra={"runs": cpu_ms},
    )


def warm(ctx: Context, engine: Engine, handle: str) -> Row:
    """The probe already made the derivative: every request here is a cache hit."""
    scenario = "  warm: the same derivative again (cache hit), 8 connections"
    if not engine.present:
        return Row(
            "11", scenario + engine.label(), "req/s", None, extra={"engine": _engine(engine)}
        )
    status, size, _, _ = load.curl(transform_url(ctx.stowage, handle))
    assert status == 200, status
    plain = _stowage_store(ctx, _random_file(ctx.tmp / "processing" / "same-size", size))

    rates = processing_tasks.warm_rates(
        ctx, (transform_url(ctx.stowage, handle), None), (f"{cdn(ctx.stowage)}/{plain}", None)
    )
    s, p = median(rates["derivative"]), median(rates["plain"])
    return Row(
        "11",
        scenario,
        "req/s",
        s,
        reference=p,
        reference_label=f"plain CDN GET of a {size:,}-byte file",
        target=">= 0.9x the plain GET",
        met=s >= 0.9 * p,
        extra={"runs": rates, "derivative_bytes": size, "engine": _engine(engine)},
    )


def floor(paths: list[Path], thumbor_cpu_ms: float | None) -> Row:
    """The CPU of the work no server can skip, alone: the JPEG decoded at 1/8 scale, the
    Lanczos reduction to 300 px and the WebP encode (quality 75, Stowage's default), in
    one thread of this process, with libvips (Stowage's engine) and with Pillow (Thumbor's).
    Against Thumbor's CPU per transformation it bounds the cold ratio any server with
    these decoders could reach on the same cores: no HTTP, no file, no cache at all."""
    vips_ms: list[float] = []
    pillow_ms: list[float] = []
    threads = pyvips.concurrency_get()
    pyvips.concurrency_set(1)  # as the server's jobs run when there is one per core
    try:
        for path in paths:  # alternated, so that drift in the machine's speed hits both
            vips_ms.append(_cpu_ms(_vips_thumbnail, path))
            pillow_ms.append(_cpu_ms(_pillow_thumbnail, path))
    finally:
        pyvips.concurrency_set(threads)
    best = min(median(vips_ms), median(pillow_ms))
    needed = thumbor_cpu_ms / 1.5 if thumbor_cpu_ms else None
    label = "  floor: 1/8 decode + resize + WebP encode alone, one thread, no server (libvips)"
    if needed is not None:
        label += f"; 1.5x Thumbor's CPU needs <= {needed:.1f} ms in all"
    return Row(
        "11",
        label,
        "ms",
        median(vips_ms),
        reference=median(pillow_ms),
        reference_label="Pillow (Thumbor's library), the same work",
        extra={
            "runs": {"libvips": vips_ms, "pillow": pillow_ms},
            "thumbor_cpu_ms": thumbor_cpu_ms,
            "needed_for_1.5x_ms": needed,
            "best_reachable_x_thumbor_cpu": thumbor_cpu_ms / best if thumbor_cpu_ms else None,
        },
    )


def _cpu_ms(work: Callable[[Path], bytes], path: Path) -> float:
    started = time.process_time()  # every thread of this process: libvips' workers too
    work(path)
    return (time.process_time() - started) * 1000


def _vips_thumbnail(path: Path) -> bytes:
    small = pyvips.Image.new_from_file(str(path), shrink=8, access="sequential")
    width, height = WIDTH, round(small.height * WIDTH / small.width)
    resized = small.thumbnail_image(width, height=height, size="force", no_rotate=True)
    return bytes(resized.webpsave_buffer(Q=75))


def _pillow_thumbnail(path: Path) -> bytes:
    with PIL.Image.open(path) as image:
        height = round(image.height * WIDTH / image.width)
        image.draft("RGB", (WIDTH, height))  # libjpeg's DCT scaling, as Thumbor asks for
        resized = image.resize((WIDTH, height), PIL.Image.Resampling.LANCZOS)
    out = io.BytesIO()
    resized.save(out, "WEBP", quality=75)
    return out.getvalue()


def _growth(pids: Callable[[], list[int]], url: str) -> tuple[float, int, float]:
    """(peak RSS growth in MiB of the largest process, status, seconds) for one GET."""
    for pid in pids():
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    before = {pid: _kib(pid, "VmRSS") for pid in pids()}
    started = time.perf_counter()
    status, _, _ = asyncio.run(_get(url))
    seconds = time.perf_counter() - started
    # A process started by the request (a new job process) grew from nothing.
    growth = max(_kib(pid, "VmHWM") - before.get(pid, 0) for pid in {*before, *pids()})
    return growth / 1024, status, seconds


def _kib(pid: int, name: str) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:  # the process has ended
        return 0
    for line in status.splitlines():
        if line.startswith(name + ":"):
            return int(line.split()[1])
    return 0


def bomb(ctx: Context, thumbor: Thumbor, engine: Engine, large: Path) -> Row:
    handle = _stowage_store(ctx, large)
    (thumbor.images / large.name).hardlink_to(large)
    t_growth, t_status, _ = _growth(thumbor.pids, thumbor.resize_url(large.name))
    s_growth, s_status, s_seconds = _growth(ctx.stowage.pids, transform_url(ctx.stowage, handle))
    if not engine.present:
        outcome = engine.label()
    elif s_status == 200:
        outcome = f" (resized in {s_seconds:.1f} s)"
    elif 400 <= s_status < 500:
        outcome = f" (refused: {s_status} in {s_seconds * 1000:.0f} ms)"
    else:  # neither a result nor a refusal: the row fails whatever the memory did
        outcome = f" (answered {s_status} after {s_seconds:.1f} s)"
    answered = s_status == 200 or 400 <= s_status < 500
    return Row(
        "11",
        f"  peak RSS growth, 100 MP JPEG -> {WIDTH} px WebP{outcome}",
        "MiB",
        round(s_growth, 1) if engine.present else None,
        reference=round(t_growth, 1),
        reference_label=f"Thumbor, answered {t_status}",
        target="< 200 MiB",
        met=answered and s_growth < 200 if engine.present else None,
        extra={
            "stowage_status": s_status,
            "stowage_seconds": round(s_seconds, 2),
            "thumbor_status": t_status,
            "engine": _engine(engine),
        },
    )


def _engine(engine: Engine) -> dict[str, Any]:
    return {"present": engine.present, "probe_status": engine.status, "detail": engine.detail}
