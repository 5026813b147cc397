"""The probe and ffmpeg as job processes: limits first, then the work.

A file is read by the probe process (``prober.py``) and held to the limits before
ffmpeg converts it. Every ffmpeg run is a subprocess of ``prlimit`` (address space and
file size limits), in a session of its own so that the whole group is killed at its
deadline, with no stdin (but a conversion's held run: ``videorun.py``). The
conversions' runs are ``videorun.py``'s.
Untrusted media is opened only as ``file:<job folder>/input`` with
``-protocol_whitelist file`` and ``-format_whitelist`` of plain media demuxers: a
playlist (HLS, concat, ffconcat, SDP, ...) is refused before it could name another file
or a network address, and nothing else can be opened.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stowage.config import Settings
from stowage.processing import sandbox
from stowage.processing.prober import Prober, Refused

#: The demuxers a conversion reads: media containers that name no other file or URL.
#: (``image2`` would read numbered siblings, ``hls``/``concat`` other files or URLs.)
DEMUXERS = "mov,mp4,m4a,3gp,3g2,mj2,matroska,webm,avi,mp3,ogg,wav,flac,aac,mpegts,flv,asf,mpeg"
GUARD = ["-protocol_whitelist", "file", "-format_whitelist", DEMUXERS]
#: A result of ours may also be a still (a thumbnail) or an HLS playlist (read only once
#: ``videoresults.segments_of`` found nothing in it but its own segments' names).
RESULT_DEMUXERS = DEMUXERS + ",image2,png_pipe,jpeg_pipe,hls"  # hls: a playlist checked before
_TAIL = 4096  # bytes of stderr kept for a failure's reason


class MediaRefused(Exception):
    """The input or the conversion failed for a reason the file gives: final, not retried."""


@dataclass(frozen=True)
class Limits:
    seconds: float
    memory: int  # RLIMIT_AS, bytes; 0: none
    output_bytes: int  # RLIMIT_FSIZE
    max_duration: float
    max_dimension: int
    max_streams: int

    @classmethod
    def of(cls, settings: Settings) -> Limits:
        return cls(
            seconds=settings.video_job_seconds,
            memory=settings.video_job_memory,
            output_bytes=settings.video_max_output_bytes,
            max_duration=settings.video_max_duration,
            max_dimension=settings.video_max_dimension,
            max_streams=settings.video_max_streams,
        )


@dataclass(frozen=True)
class Media:
    """What the probe read of a file (ffprobe's fields)."""

    format: str
    duration: float
    size: int
    streams: tuple[dict[str, Any], ...]

    def first(self, kind: str) -> dict[str, Any] | None:
        return next((s for s in self.streams if s.get("codec_type") == kind), None)

    def summary(self, mimetype: str, extension: str) -> dict[str, Any]:
        """The hosted service's metadata of a file (``metadata.result``/``source``)."""
        video, audio = self.first("video"), self.first("audio")
        found: dict[str, Any] = {
            "mime_type": mimetype,
            "extname": f".{extension}",
            "file_size": self.size,
            "duration": round(self.duration * 1000),
        }
        if video is not None:
            found |= {
                "width": video.get("width"),
                "height": video.get("height"),
                "video_codec": video.get("codec_name"),
                "fps": _rate(video.get("avg_frame_rate")),
                "video_bitrate": _kbps(video.get("bit_rate")),
            }
        if audio is not None:
            found |= {
                "audio_codec": audio.get("codec_name"),
                "audio_channels": audio.get("channels"),
                "audio_sample_rate": _int(audio.get("sample_rate")),
                "audio_bitrate": _kbps(audio.get("bit_rate")),
            }
        return found


async def probe(
    path: Path, limits: Limits, prober: Prober, *, result: bool = False, formats: str = ""
) -> Media:
    """What ``path`` holds, read in the probe process (``prober.py``), held to the
    limits; ``MediaRefused`` otherwise. ``result``: a file ffmpeg made here (a thumbnail
    is an image); ``formats``: another demuxer whitelist (a watermark's)."""
    demuxers = formats or (RESULT_DEMUXERS if result else DEMUXERS)
    seconds = min(limits.seconds, 60.0)
    try:
        read = await prober.read(path, demuxers, seconds=seconds, memory=limits.memory)
    except Refused as exc:
        raise MediaRefused(str(exc)) from exc
    fmt = read.get("format") or {}
    streams = tuple(read.get("streams") or ())
    if not fmt or not streams:
        raise MediaRefused("not a video or audio file ffmpeg reads")
    media = Media(
        str(fmt.get("format_name", "")),
        _float(fmt.get("duration")),
        _int(fmt.get("size")) or path.stat().st_size,
        streams,
    )
    _check(media, limits)
    return media


def _check(media: Media, limits: Limits) -> None:
    if len(media.streams) > limits.max_streams:
        raise MediaRefused(
            f"the file has {len(media.streams)} streams; at most {limits.max_streams}"
        )
    if media.duration > limits.max_duration:
        raise MediaRefused(
            f"the file lasts {media.duration:g} s; at most {limits.max_duration:g} s"
        )
    for stream in media.streams:
        if stream.get("codec_type") != "video":
            continue
        w, h = _int(stream.get("width")), _int(stream.get("height"))
        if max(w, h) > limits.max_dimension:
            raise MediaRefused(f"a video stream is {w}x{h}; at most {limits.max_dimension} a side")
    if media.first("video") is None and media.first("audio") is None:
        raise MediaRefused("the file has no video or audio stream")


#: Given each line of a process's stdout instead of keeping it.
Lines = Callable[[bytes], Awaitable[None]]


async def run(
    argv: list[str], limits: Limits, *, cwd: Path, seconds: float, lines: Lines | None = None
) -> bytes:
    """Runs ``argv`` in the sandbox (``sandbox.py``: no network, limits) in its own
    session; killed at ``seconds``. Its stdout (or each line to ``lines``);
    ``MediaRefused`` with the end of its stderr when it fails."""
    proc = await spawn(argv, limits, cwd=cwd)
    return await finish(proc, argv, cwd=cwd, seconds=seconds, lines=lines)


async def spawn(
    argv: list[str], limits: Limits, *, cwd: Path, stdin: int = asyncio.subprocess.DEVNULL
) -> asyncio.subprocess.Process:
    """``argv`` started in the sandbox, in a session of its own (``finish`` waits for it);
    its stdin a pipe only for a run that waits for its first input (``videorun.hold``)."""
    caps = sandbox.Caps(memory=limits.memory, output_bytes=limits.output_bytes)
    if (tool := sandbox.missing((argv[0],), caps)) is not None:  # retried, then failed: the node's
        raise RuntimeError(f"{tool} is not installed on this node (Debian: ffmpeg, util-linux)")
    return await sandbox.spawn(
        *sandbox.prefix(caps),  # no network, limits, below the server's own processes
        *argv,
        stdin=stdin,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=cwd,
        start_new_session=True,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"},
    )


async def finish(
    proc: asyncio.subprocess.Process,
    argv: list[str],
    *,
    cwd: Path,
    seconds: float,
    lines: Lines | None = None,
) -> bytes:
    """Waits for a spawned run, killed (its whole session) at ``seconds`` or when the
    wait is cancelled; as ``run`` answers."""
    try:
        async with asyncio.timeout(seconds):
            out, err = await _read(proc, lines)
    except TimeoutError as exc:
        await sandbox.reap(proc)
        raise MediaRefused(f"{argv[0]} ran past its {seconds:g} s deadline") from exc
    except BaseException:
        kill(proc)  # at once, even if this wait is cancelled again
        with contextlib.suppress(Exception):
            await asyncio.shield(sandbox.reap(proc))
        raise
    if proc.returncode != 0:
        # The last lines say why; the job folder's path is no business of the client's.
        said = err.decode("utf-8", "replace").replace(f"{cwd}/", "").strip().splitlines()
        shown = "; ".join(said[-2:]) if said else f"exit status {proc.returncode}"
        raise MediaRefused(f"{argv[0]} refused the file: {shown[:300]}")
    return out


async def _read(proc: asyncio.subprocess.Process, lines: Lines | None) -> tuple[bytes, bytes]:
    """stdout (its last 4 MiB; or each line to ``lines``) and the tail of
    stderr, then the exit."""
    assert proc.stdout is not None and proc.stderr is not None

    async def each(stream: asyncio.StreamReader, keep: int) -> bytes:
        assert lines is not None
        while True:
            try:
                line = await stream.readline()
            except ValueError:  # past the reader's limit: no report of ffmpeg's
                continue
            if not line:
                return b""
            await lines(line[:keep])

    async def tail(stream: asyncio.StreamReader, keep: int) -> bytes:
        kept = b""
        while chunk := await stream.read(65536):
            kept = (kept + chunk)[-keep:]
        return kept

    reader = tail if lines is None else each
    out, err = await asyncio.gather(reader(proc.stdout, 4 * 1024 * 1024), tail(proc.stderr, _TAIL))
    await proc.wait()
    return out, err


def kill(proc: asyncio.subprocess.Process) -> None:
    """Kills the run's whole session (it may have started others)."""
    sandbox.kill_group(proc.pid)


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _kbps(value: Any) -> int | None:
    found = _int(value)
    return round(found / 1000) if found else None


def _rate(value: Any) -> float | None:
    top, _, bottom = str(value or "").partition("/")
    try:
        return round(float(top) / float(bottom or 1), 3) if float(bottom or 1) else None
    except ValueError:
        return None
