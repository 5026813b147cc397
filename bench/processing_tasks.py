"""Scenario 11, per task (issue 23): server CPU per transformation, Stowage against
Thumbor, for every task both have, and their geometric mean; and a warm ``auto_image``
row against the plain GET.

Sources: 2-megapixel photo-like JPEGs (``images.sources``), a different one per request
of a run, so that every Stowage request is a cache miss (Thumbor keeps no results). The
results are JPEG unless the task asks for a format, for both. CPU is the user + system
time of every process of the server (``cpu_seconds``) over the run, divided by the
requests; 4 connections.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from dataclasses import dataclass

import pyvips

from bench import images, load
from bench.cdnclient import CONNECTIONS, cdn, fetch_all
from bench.scenarios import (
    Context,
    Row,
    _no_errors,
    _random_file,
    _stowage_store,
    alternate,
    median,
)
from bench.servers import cpu_seconds
from bench.thumbor import Thumbor

SIZE = (1600, 1200)
MARK = "mark.png"


@dataclass(frozen=True)
class Pair:
    """One task: the Stowage chain and the Thumbor path before the image's name."""

    name: str
    stowage: str  # {mark} is the watermark's handle
    thumbor: str


PAIRS = (
    Pair("resize (fit-in 300x300)", "resize=width:300,height:300,fit:clip", "fit-in/300x300"),
    Pair("crop 800x600", "crop=dim:[100,100,800,600]", "100x100:900x700"),
    Pair("rotate 90", "rotate=deg:90", "filters:rotate(90)"),
    Pair("flip", "flip", "0x-0"),
    Pair("blur sigma 4", "blur=amount:4", "filters:blur(8,4)"),
    Pair("sharpen", "sharpen=amount:2", "filters:sharpen(2,1,true)"),
    Pair("grayscale", "monochrome", "filters:grayscale()"),
    Pair("WebP quality 80", "output=format:webp,quality:80", "filters:format(webp):quality(80)"),
    Pair(
        "watermark",
        "watermark=file:{mark},position:[bottom,right]",
        f"filters:watermark({MARK},-10,-10,0)",
    ),
    Pair(
        "rounded corners 40",
        "rounded_corners=radius:40,background:white",
        "filters:round_corner(40,255,255,255)",
    ),
    Pair("smart crop 300x300", "smart_crop=width:300,height:300", "300x300/smart"),
)


def tasks(ctx: Context, thumbor: Thumbor, per_run: int) -> list[Row]:
    """Thumbor must be running; its images folder receives the sources."""
    work = ctx.tmp / "processing-tasks"
    paths = images.sources(work / "sources", per_run, SIZE)
    handles = [_stowage_store(ctx, path) for path in paths]
    for path in paths:
        (thumbor.images / f"t-{path.name}").hardlink_to(path)
    mark = work / MARK
    pyvips.Image.new_from_file(str(images.sources(work / "mark", 1, (320, 320))[0])).pngsave(
        str(mark)
    )
    (thumbor.images / MARK).hardlink_to(mark)
    mark_handle = _stowage_store(ctx, mark)
    rows: list[Row] = []
    ratios: list[float] = []
    for pair in PAIRS:
        chain = pair.stowage.format(mark=mark_handle)
        urls = {
            "stowage": [f"{cdn(ctx.stowage)}/{chain}/{h}" for h in handles],
            "thumbor": [f"{thumbor.url}/unsafe/{pair.thumbor}/t-{p.name}" for p in paths],
        }
        pids = {"stowage": ctx.stowage.pids, "thumbor": thumbor.pids}
        cpu = {name: _cpu_ms(urls[name], pids[name]) for name in ("thumbor", "stowage")}
        ratio = cpu["stowage"] / cpu["thumbor"]
        ratios.append(ratio)
        rows.append(
            Row(
                "11",
                f"  CPU per transformation, {pair.name} ({ratio:.2f}x Thumbor)",
                "ms",
                round(cpu["stowage"], 2),
                reference=round(cpu["thumbor"], 2),
                reference_label="Thumbor, the same task",
                extra={"stowage_chain": chain, "thumbor_path": pair.thumbor, "ratio": ratio},
            )
        )
    mean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    rows.append(
        Row(
            "11",
            f"  geometric mean of the {len(ratios)} tasks' CPU ratios (Stowage / Thumbor)",
            "x",
            round(mean, 3),
            reference=1.0,
            reference_label="Thumbor",
            target="<= 1.0x Thumbor's CPU",
            met=mean <= 1.0,
            extra={"ratios": dict(zip([p.name for p in PAIRS], ratios, strict=True))},
        )
    )
    return rows


def _cpu_ms(urls: list[str], pids: Callable[[], list[int]]) -> float:
    before = cpu_seconds(pids())
    _, statuses, _ = asyncio.run(fetch_all(urls, CONNECTIONS // 2))
    spent = cpu_seconds(pids()) - before
    bad = [s for s in statuses if s != 200]
    if bad:
        raise RuntimeError(f"{urls[0]}: {len(bad)} of {len(urls)} answered {bad[:3]}")
    return spent * 1000 / len(urls)


def warm_rates(
    ctx: Context, derivative: tuple[str, dict[str, str] | None], plain: tuple[str, None]
) -> dict[str, list[float]]:
    """Requests a second for a cached derivative and for a plain GET, in short runs that
    take turns: the machine's speed drifts over a minute (a plain GET alone went from
    2,657 to 2,061 req/s in one row), and runs taken close together share the drift."""

    def run(url: str, headers: dict[str, str] | None) -> Callable[[], float]:
        def go() -> float:
            seconds = ctx.sizes.wrk_seconds // 2 + 1  # 3 s in a full run, 1 s in --quick
            res = load.wrk(url, seconds=seconds, connections=CONNECTIONS, headers=headers)
            _no_errors(url, res)
            return res.rps

        return go

    return alternate(
        max(2, 2 * ctx.sizes.rounds), {"derivative": run(*derivative), "plain": run(*plain)}
    )


def warm_auto_image(ctx: Context, handle: str) -> Row:
    """``auto_image`` answered from the cache (an AVIF for an ``Accept`` that takes it)
    against a plain CDN GET of a file of the derivative's size."""
    accept = {"Accept": "image/avif,image/webp,*/*"}
    url = f"{cdn(ctx.stowage)}/auto_image/resize=width:300/{handle}"
    status, size, _, _ = load.curl(url, headers=accept)
    assert status == 200, status
    plain = _stowage_store(ctx, _random_file(ctx.tmp / "processing-tasks" / "auto-same", size))
    rates = warm_rates(ctx, (url, accept), (f"{cdn(ctx.stowage)}/{plain}", None))
    s, p = median(rates["derivative"]), median(rates["plain"])
    return Row(
        "11",
        "  warm: auto_image (AVIF for an Accept that takes it) again (cache hit), 8 connections",
        "req/s",
        s,
        reference=p,
        reference_label=f"plain CDN GET of a {size:,}-byte file",
        target=">= 0.9x the plain GET",
        met=s >= 0.9 * p,
        extra={"runs": rates, "derivative_bytes": size},
    )
