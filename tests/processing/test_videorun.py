"""A conversion's first ffmpeg run started while its input is probed
(processing/videorun.py): it opens the source only once released, a dropped one is
killed, and a run held with other arguments than the probe's are is not used."""

from __future__ import annotations

import asyncio
import errno
import os
import subprocess
import time
from pathlib import Path

import pytest

from stowage.processing import grammar, video, videorun
from tests.processing.test_video_plan import LIMITS


def plan(segment: str) -> video.Plan:
    return video.plan(grammar.parse_task(segment))


def clip(path: Path, container: str = "mpegts") -> Path:
    pattern = "testsrc=size=160x120:rate=10:duration=1"
    argv = ["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", pattern]
    subprocess.run([*argv, "-c:v", "libx264", "-f", container, str(path)], check=True)
    return path


def opened_for_reading(fifo: Path) -> bool:
    """Whether some process has the FIFO open to read (a writer's non-blocking open
    fails with ENXIO while none has, and changes nothing)."""
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            return False
        raise
    return True


async def until_ffmpeg(pid: int) -> None:
    """Until the sandbox's chain of programs has become ffmpeg, then a little longer
    than ffmpeg needs to load and read its options."""
    ends = time.monotonic() + 10
    while not Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ffmpeg\x00"):
        assert time.monotonic() < ends, "ffmpeg did not start"
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.5)


async def test_a_held_run_opens_its_source_only_once_released(tmp_path: Path) -> None:
    source, dest = tmp_path / "input", tmp_path / "output.mp4"
    os.mkfifo(source)  # a FIFO tells when it is opened
    made = clip(tmp_path / "clip.ts")
    held = await videorun.hold(source, dest, plan("video_convert=preset:h264"), LIMITS)
    assert held is not None
    await until_ffmpeg(held.proc.pid)
    assert not opened_for_reading(source)
    assert held.proc.returncode is None
    released = asyncio.ensure_future(held.release(seconds=20, lines=None))
    async with asyncio.timeout(10):  # ffmpeg opens the source now: a writer's open returns
        writer = await asyncio.to_thread(os.open, source, os.O_WRONLY)
    await asyncio.to_thread(_copy, made, writer)
    await released
    assert held.proc.returncode == 0 and dest.stat().st_size > 0


def _copy(path: Path, fd: int) -> None:
    with os.fdopen(fd, "wb") as out:
        out.write(path.read_bytes())


async def test_a_dropped_run_is_killed_and_writes_nothing(tmp_path: Path) -> None:
    source, dest = clip(tmp_path / "input"), tmp_path / "output.mp4"
    held = await videorun.hold(source, dest, plan("video_convert=preset:h264"), LIMITS)
    assert held is not None
    await until_ffmpeg(held.proc.pid)
    await held.drop()
    assert held.proc.returncode == -9 and not dest.exists()
    await held.drop()  # twice is harmless


async def test_a_run_held_with_other_outputs_is_dropped_for_a_new_one(tmp_path: Path) -> None:
    source, dest = clip(tmp_path / "input"), tmp_path / "output.mp4"
    made = plan("video_convert=preset:h264")
    first = ["-vf", "trim=end_frame=1", "-frames:v", "1", "-f", "image2", f"file:{tmp_path}/a.jpg"]
    held = await videorun.hold(source, dest, made, LIMITS, first)
    assert held is not None
    other = [*first[:-1], f"file:{tmp_path}/b.jpg"]
    await videorun.convert(source, dest, made, LIMITS, extra=other, held=held)
    assert held.proc.returncode == -9  # killed, never released
    assert (tmp_path / "b.jpg").is_file() and not (tmp_path / "a.jpg").exists()
    assert dest.stat().st_size > 0


async def test_a_held_run_makes_what_a_plain_run_makes(tmp_path: Path) -> None:
    """The waiting input has no streams and no metadata: the same streams are chosen."""
    source = clip(tmp_path / "input", "matroska")
    for name in ("held", "plain"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "input").write_bytes(source.read_bytes())
        dest = folder / "output.webm"
        made = plan("video_convert=preset:webm,width:80")
        held = await videorun.hold(folder / "input", dest, made, LIMITS)
        assert held is not None
        if name == "plain":
            await held.drop()
            held = None
        await videorun.convert(folder / "input", dest, made, LIMITS, held=held)
    assert _streams(tmp_path / "held/output.webm") == _streams(tmp_path / "plain/output.webm")


def _streams(path: Path) -> str:
    argv = ["ffprobe", "-v", "error", "-show_entries", "stream=codec_name,width,height"]
    argv += ["-show_entries", "format_tags", "-of", "compact", str(path)]
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


def test_a_watermarked_plan_is_not_held(tmp_path: Path) -> None:
    made = plan("video_convert=preset:h264,watermark_url:https://example.com/m.png")
    held = asyncio.run(videorun.hold(tmp_path / "input", tmp_path / "o.mp4", made, LIMITS))
    assert held is None


@pytest.mark.parametrize("preset", ["h264", "hls.variant", "mp3", "thumbnail"])
def test_the_held_argv_is_the_first_run_and_one_input_more(preset: str, tmp_path: Path) -> None:
    made = plan(f"video_convert=preset:{preset}")
    [argv] = videorun.passes(tmp_path / "input", tmp_path / "out", made, None, ())
    assert argv.count("-i") == 1 and argv[argv.index("-i") + 1] == f"file:{tmp_path}/input"
