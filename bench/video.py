"""Scenario 13 (issue 27): video conversions as jobs, against the ``ffmpeg`` command.

- A thumbnail at 5 s of a 1080p H.264 clip (``video_convert=preset:thumbnail,
  thumbnail_offset:5``), a new source each job, all asked at once: thumbnails per second
  from the first request to the last ``completed``, against the same ffmpeg command
  (``video.plan(...).argv``: the job's own options) run as many at a time as Stowage has
  job slots (``video_jobs`` per worker process). Target >= 0.8x.
- A 10-second 720p clip to ``preset:h264`` and to ``preset:webm``, one job at a time:
  wall time from the first request to ``completed`` against ffmpeg with the preset's
  settings. Target <= 1.1x.
- The time from a thumbnail's first request to ``completed``, p50 and p99, with 2 nodes
  and 8 jobs at once (``videonodes.py``).

The clips come from ffmpeg's ``testsrc`` and a sine tone, made at setup. Stowage's share
is reading the source into the job folder, its ffprobe run, storing the result and the
registry's writes. The status is polled every 0.25 s and the end time read from the
jobs' registry rows (their ``updated``), so polling neither costs the jobs CPU nor adds
to their time.

Alone: ``.venv/bin/python -m bench.video [rounds] [--quick]`` (starts its own Stowage); in
the full run: ``scripts/bench --only video``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import aiohttp

from bench import videonodes
from bench.scenarios import Context, Row, Sizes, _peak, _stowage_store, alternate, median
from bench.servers import Stowage
from stowage.processing import grammar, video

THUMBNAIL = "video_convert=preset:thumbnail,thumbnail_offset:5"
CONVERSIONS = ("h264", "webm")
POLL = 0.25  # the time is read from the registry: see _jobs
JOBS_PER_WORKER = 1  # video_jobs' default: each worker process runs one job at a time


def make_clip(path: Path, size: str, seconds: int, rate: int = 30) -> Path:
    """``seconds`` of ffmpeg's test pattern at ``size`` and ``rate`` fps, and a tone:
    H.264 and AAC."""
    pattern = f"testsrc=size={size}:rate={rate}:duration={seconds}"
    sources = ["-f", "lavfi", "-i", pattern, "-f", "lavfi", "-i", f"sine=duration={seconds}"]
    codecs = ["-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-c:a", "aac"]
    argv = ["ffmpeg", "-v", "error", "-y", *sources, *codecs, "-shortest", str(path)]
    subprocess.run(argv, check=True)
    return path


def ffmpeg_argv(task: str, source: Path, dest: Path) -> list[str]:
    """The command a job runs for ``task`` (its plan's options), at the job's priority
    (``nice -n 10``: on a busy machine a job yields to everything else, and so must the
    command it is compared with), without the job's memory and size limits."""
    plan = video.plan(grammar.parse_task(task))
    command = ["ffmpeg", "-nostdin", "-v", "error", "-y", *plan.argv(str(source), str(dest))]
    return ["nice", "-n", "10", *command]


def run_ffmpeg(task: str, source: Path, out: Path, count: int, slots: int) -> float:
    """``count`` runs of the job's command, ``slots`` at a time; seconds for all."""
    extension = video.plan(grammar.parse_task(task)).extension

    def one(n: int) -> None:
        subprocess.run(ffmpeg_argv(task, source, out / f"r{n}.{extension}"), check=True)

    started = time.perf_counter()
    with ThreadPoolExecutor(slots) as pool:
        list(pool.map(one, range(count)))
    return time.perf_counter() - started


async def _jobs(registry: Path, urls: list[str]) -> float:
    """Every conversion asked at once, then polled (slowly) until completed; seconds from
    the first request to the last job's end as its registry row recorded it. Polling
    often would take CPU from the jobs' ffmpeg, which runs at a lower priority."""
    async with aiohttp.ClientSession() as http:
        started = time.time()
        await asyncio.gather(*(videonodes.until_completed(http, url, POLL) for url in urls))
    handles = [url.rsplit("/", 1)[-1] for url in urls]
    marks = ", ".join("?" * len(handles))
    with contextlib.closing(sqlite3.connect(f"file:{registry}?mode=ro", uri=True)) as db:
        sql = "SELECT max(updated) FROM video_jobs WHERE status = 'completed'"
        sql += f" AND handle IN ({marks})"
        [(ended,)] = db.execute(sql, handles).fetchall()
    return float(ended) - started


def video_scenario(ctx: Context) -> list[Row]:
    work = ctx.tmp / "video"
    work.mkdir(parents=True, exist_ok=True)
    out = work / "out"
    out.mkdir(exist_ok=True)
    rounds = max(1, ctx.sizes.rounds)
    slots = ctx.stowage.workers * JOBS_PER_WORKER
    quick = ctx.sizes.video_seconds < 10  # --quick: the scenario runs, its figures are rough
    count = slots if quick else 2 * slots  # each slot runs two thumbnails in a run
    rate = 5 if quick else 30
    big = make_clip(work / "1080p.mp4", "1920x1080", 6, rate)
    clip = make_clip(work / "720p.mp4", "1280x720", ctx.sizes.video_seconds, rate)
    base = f"http://127.0.0.1:{ctx.stowage.cdn_port}/{ctx.key}"
    registry = ctx.stowage.data_dir / "stowage.db"  # the bench's node runs on SQLite
    version = subprocess.run(["ffmpeg", "-version"], capture_output=True, text=True)
    label = " ".join(version.stdout.split()[:3])

    def stowage_thumbnails() -> float:
        handles = [_stowage_store(ctx, big) for _ in range(count)]  # new jobs each run
        seconds = asyncio.run(_jobs(registry, [f"{base}/{THUMBNAIL}/{h}" for h in handles]))
        return count / seconds

    def ffmpeg_thumbnails() -> float:
        return count / run_ffmpeg(THUMBNAIL, big, out, count, slots)

    def thumbnails() -> Row:
        rates = alternate(rounds, {"stowage": stowage_thumbnails, "ffmpeg": ffmpeg_thumbnails})
        s, f = median(rates["stowage"]), median(rates["ffmpeg"])
        return Row(
            "13",
            f"video: thumbnail at 5 s of a 1080p {rate} fps H.264 clip, a new source each, {count} "
            f"jobs asked at once ({slots} job slots)",
            "thumbnails/s",
            s,
            reference=f,
            reference_label=f"{label}, the job's command (nice 10), {slots} at a time",
            target=">= 0.8x ffmpeg",
            met=s >= 0.8 * f,
            extra={"runs": rates, "jobs": count},
        )

    def conversion(preset: str) -> Row:
        task = f"video_convert=preset:{preset}"

        def stowage_run() -> float:
            handle = _stowage_store(ctx, clip)
            return asyncio.run(_jobs(registry, [f"{base}/{task}/{handle}"]))

        def ffmpeg_run() -> float:
            return run_ffmpeg(task, clip, out, 1, 1)

        times = alternate(rounds, {"stowage": stowage_run, "ffmpeg": ffmpeg_run})
        s, f = median(times["stowage"]), median(times["ffmpeg"])
        return Row(
            "13",
            f"  {ctx.sizes.video_seconds} s 720p {rate} fps clip to preset:{preset}, one job, "
            "first request to completed",
            "s",
            s,
            reference=f,
            reference_label=f"{label} with the preset's settings (nice 10)",
            target="<= 1.1x ffmpeg",
            met=s <= 1.1 * f,
            extra={"runs": times},
        )

    rows = [_peak(ctx, thumbnails)]
    rows += [_peak(ctx, functools.partial(conversion, preset)) for preset in CONVERSIONS]
    alone = median([run_ffmpeg(THUMBNAIL, big, out, 1, 1) for _ in range(3)])
    rows += videonodes.two_nodes_row(ctx, big, THUMBNAIL, alone, rate, POLL)
    shutil.rmtree(work, ignore_errors=True)
    return rows


def main() -> None:
    """The scenario alone, against a Stowage of its own."""
    args = [a for a in sys.argv[1:] if a != "--quick"]
    tmp = Path(tempfile.mkdtemp(prefix="bench-video-"))
    stowage = Stowage(tmp, os.cpu_count() or 2)  # as scripts/bench runs it
    try:
        stowage.start()
        sizes = Sizes.quick() if "--quick" in sys.argv else Sizes.full()
        ctx = Context(tmp, sizes, stowage, None, None)  # type: ignore[arg-type]
        ctx.sizes.rounds = int(args[0]) if args else 3
        ctx.key, ctx.secret = stowage.create_app()
        for row in video_scenario(ctx):
            ratio = row.stowage / row.reference if row.stowage and row.reference else 0
            print(
                f"{row.scenario.strip()}: Stowage {row.stowage:.3f} {row.unit}, "
                f"{row.reference_label} {row.reference:.3f} {row.unit}: {ratio:.2f}x "
                f"{row.target}; peak RSS {row.peak_rss_mib} MiB; runs {row.extra['runs']}"
                f" {row.extra.get('per_node', '')}"
            )
    finally:
        stowage.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
