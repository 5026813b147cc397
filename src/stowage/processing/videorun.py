"""A conversion's ffmpeg runs: the passes of its plan, the first started early; what the
input's probe must show before they run (``fits``), and their progress, written to the
job's row (``progress_writer``).

Starting ffmpeg costs about 0.05 s here (loading some 200 libraries), more than the
input's probe (``prober.py``, about 0.015 s), which must end before ffmpeg may open the
input. So the first pass
is started while the input is probed (``hold``), with one more input before the source:
an empty ffmetadata file on its stdin. ffmpeg opens its inputs in order, so it loads,
reads its options and then waits on its stdin, the source not yet opened. Once the probe
accepted the source, ``convert`` writes that file (``Held.release``) and ffmpeg goes on;
a refused source or another pass's arguments drop the held run (``Held.drop``: killed).

The extra input has no streams, so ffmpeg's choice of streams and the result are the
same: the plan maps no input by its number (a watermarked plan does, and is not held),
and the plan drops the inputs' metadata (``-map_metadata -1``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from stowage.processing import ffmpeg
from stowage.processing.ffmpeg import Limits, Lines, Media, MediaRefused
from stowage.processing.video import Plan
from stowage.registry.base import VideoJob, VideoJobRows

log = logging.getLogger("stowage.video")

#: Told the share of the work done (0..1) as ffmpeg reports it.
Progress = Callable[[float], Awaitable[None]]
_BASE = ["ffmpeg", "-nostdin", "-hide_banner", "-v", "error", "-y"]
_REPORT = ["-progress", "pipe:1", "-nostats"]  # read by ``_reporter``
#: The input a held run waits on: what ``Held.release`` writes, then closes.
_GATE = ["-f", "ffmetadata", "-protocol_whitelist", "pipe", "-i", "pipe:0"]
_GATE_TEXT = b";FFMETADATA1\n"


@dataclass
class Held:
    """A conversion's first pass, started and waiting before it opens the source."""

    proc: asyncio.subprocess.Process
    argv: list[str]  # the pass's arguments, as ``convert`` would run it
    cwd: Path
    used: bool = field(default=False)

    async def release(self, *, seconds: float, lines: Lines | None) -> None:
        """Lets ffmpeg go on (to the source), then waits for it as ``ffmpeg.run`` does."""
        self.used = True
        assert self.proc.stdin is not None
        with contextlib.suppress(ConnectionError):  # it ended early: its exit says why
            self.proc.stdin.write(_GATE_TEXT)
            await self.proc.stdin.drain()
        self.proc.stdin.close()
        await ffmpeg.finish(self.proc, self.argv, cwd=self.cwd, seconds=seconds, lines=lines)

    async def drop(self) -> None:
        """Kills the run unless it was released (idempotent)."""
        if self.used or self.proc.returncode is not None:
            return
        self.used = True
        ffmpeg.kill(self.proc)
        with contextlib.suppress(Exception):
            await asyncio.shield(self.proc.wait())


def seconds_made(media: Media, plan: Plan) -> float:
    """How much media ffmpeg will write: the clip's length, or the rest after the offset."""
    rest = max(0.0, media.duration - (plan.seek or 0.0))
    return min(rest, plan.length) if plan.length is not None else rest


def fits(media: Media, plan: Plan) -> None:
    """``MediaRefused`` when the probed file lacks what the plan needs."""
    if plan.preset.video and media.first("video") is None:
        raise MediaRefused(f"preset {plan.preset.name} needs a video stream; the file has none")
    if not plan.preset.video and media.first("audio") is None:
        raise MediaRefused(f"preset {plan.preset.name} needs an audio stream; the file has none")
    if plan.seek is not None and media.duration and plan.seek >= media.duration:
        raise MediaRefused(
            f"the offset {plan.seek:g} s is past the end of the file ({media.duration:g} s)"
        )


def passes(
    source: Path, dest: Path, plan: Plan, watermark: Path | None, extra: Sequence[str]
) -> list[list[str]]:
    """The argv of each run of the plan (two for a two-pass plan); ``extra`` outputs go
    with the last. The paths are given as ``file:`` so that no name is read as a
    protocol or an option."""
    mark = None if watermark is None else f"file:{watermark}"
    src, out = f"file:{source}", f"file:{dest}"
    steps = [(0, out)] if not plan.two_pass else [(1, f"file:{source.parent}/pass1"), (2, out)]
    log = str(source.parent / "passlog")
    runs = []
    for n, to in steps:
        passed = plan.argv(src, to, mark, pass_=n, passlog=log)
        passed += list(extra) if to == out else []
        runs.append([*_BASE, *_REPORT, *ffmpeg.GUARD, *passed])
    return runs


async def hold(
    source: Path, dest: Path, plan: Plan, limits: Limits, extra: Sequence[str] = ()
) -> Held | None:
    """The plan's first run started, waiting (see the module's docstring); None for a
    watermarked plan, whose graph names its inputs by number."""
    if plan.watermark is not None:
        return None
    argv = passes(source, dest, plan, None, extra)[0]
    gated = [*argv[: len(_BASE) + len(_REPORT)], *_GATE, *argv[len(_BASE) + len(_REPORT) :]]
    proc = await ffmpeg.spawn(gated, limits, cwd=source.parent, stdin=asyncio.subprocess.PIPE)
    return Held(proc, argv, source.parent)


async def convert(
    source: Path,
    dest: Path,
    plan: Plan,
    limits: Limits,
    watermark: Path | None = None,
    *,
    progress: Progress | None = None,
    seconds: float = 0.0,
    extra: Sequence[str] = (),
    held: Held | None = None,
) -> None:
    """ffmpeg on the plan, within the job's deadline. ``progress`` is told the share done
    of ``seconds`` of media (ffmpeg's ``-progress`` report on its stdout; each pass of two
    is half). ``extra``: more outputs of the (last) run, after the result
    (``videothumbs.Stills.args``). ``held``: the first run, started early; used when its
    arguments are the first run's, else dropped."""
    runs = passes(source, dest, plan, watermark, extra)
    if held is not None and held.argv != runs[0]:  # the probe changed the stills' frame
        await held.drop()
        held = None
    ends = time.monotonic() + limits.seconds
    for n, argv in enumerate(runs):  # a failed or cancelled run is killed by ``finish``
        left = max(0.1, ends - time.monotonic())
        lines = _reporter(progress, seconds, n / len(runs), 1 / len(runs))
        if n == 0 and held is not None:
            await held.release(seconds=left, lines=lines)
        else:
            await ffmpeg.run(argv, limits, cwd=source.parent, seconds=left, lines=lines)
    if not dest.is_file() or dest.stat().st_size == 0:
        raise MediaRefused("ffmpeg made no output (is the offset past the end?)")


def _reporter(
    progress: Progress | None, seconds: float, start: float, share: float
) -> Lines | None:
    """A reader of ffmpeg's ``-progress`` lines (``out_time_us=...``) that tells
    ``progress`` the share done: ``start`` plus this pass's ``share`` of it."""
    if progress is None or seconds <= 0:
        return None

    async def line(text: bytes) -> None:
        key, _, value = text.strip().partition(b"=")
        if key == b"out_time_us" and value.isdigit():
            await progress(start + share * min(1.0, int(value) / 1e6 / seconds))

    return line


#: A running job's progress is written at most this often (seconds): one small write.
PROGRESS_EVERY = 1.0


def progress_writer(rows: VideoJobRows, job: VideoJob, worker: str) -> Progress:
    """Writes the share ffmpeg reports done to the job's row (the status answer's
    ``data.progress``, on every node), at most every ``PROGRESS_EVERY`` seconds and
    only when it grew by a percent; a failed write is skipped, not the job's failure."""
    last = [0.0, -1.0]  # when, what

    async def told(share: float) -> None:
        percent, now = round(100 * share, 1), time.monotonic()
        if now - last[0] < PROGRESS_EVERY or percent < last[1] + 1:
            return
        last[:] = [now, percent]
        try:
            await rows.video_progress(job.id, worker, percent)
        except Exception:
            log.warning("video job %s: its progress was not written", job.uuid, exc_info=True)

    return told
