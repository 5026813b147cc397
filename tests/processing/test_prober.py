"""The probe process (processing/prober.py, probeserver.py): its readings are ffprobe's
fields for every kind of file a conversion takes; each file is read by a child with its
own deadline and memory limit, in a network namespace of its own; a cancelled read
kills its child; a probe process that died is started again."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from stowage.processing import ffmpeg, prober
from stowage.processing.prober import Prober, Refused

#: (file name, ffmpeg's output options): containers and codecs a conversion reads.
CLIPS = [
    ("h264.mp4", ["-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac"]),
    ("vp9.webm", ["-c:v", "libvpx-vp9", "-deadline", "realtime", "-c:a", "libopus"]),
    ("three.mkv", ["-map", "0", "-map", "1", "-map", "1", "-c:v", "mpeg4", "-c:a", "flac"]),
    ("mpeg2.ts", ["-c:v", "mpeg2video", "-c:a", "mp2"]),
    ("audio.mp3", ["-vn", "-c:a", "libmp3lame", "-ac", "2", "-ar", "44100"]),
    ("audio.wav", ["-vn", "-c:a", "pcm_s16le", "-ar", "22050"]),
    ("flv.flv", ["-c:v", "flv", "-c:a", "aac", "-ar", "44100"]),
]
FIELDS = ("codec_type", "codec_name", "width", "height", "avg_frame_rate", "channels")


def make(path: Path, options: list[str], size: str = "176x144", rate: int = 24) -> Path:
    sources = ["-f", "lavfi", "-i", f"testsrc=size={size}:rate={rate}:duration=2"]
    sources += ["-f", "lavfi", "-i", "sine=duration=2"]
    argv = ["ffmpeg", "-v", "error", "-y", *sources, *options, "-shortest", str(path)]
    subprocess.run(argv, check=True)
    return path


def ffprobe(path: Path) -> dict[str, Any]:
    argv = ["ffprobe", "-v", "error", "-show_format", "-show_streams", "-of", "json", str(path)]
    found: dict[str, Any] = json.loads(subprocess.run(argv, check=True, capture_output=True).stdout)
    return found


@pytest.fixture
async def probes(tmp_path: Path) -> Any:
    made = Prober(tmp_path / "probe")
    yield made
    await made.close()


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


async def read(probes: Prober, path: Path, seconds: float = 10, memory: int = 0) -> dict[str, Any]:
    return await probes.read(path, ffmpeg.DEMUXERS, seconds=seconds, memory=memory)


@pytest.mark.parametrize(("name", "options"), CLIPS)
async def test_a_reading_is_ffprobes(
    probes: Prober, tmp_path: Path, name: str, options: list[str]
) -> None:
    clip = make(tmp_path / name, options)
    ours, theirs = await read(probes, clip), ffprobe(clip)
    assert ours["format"]["format_name"] == theirs["format"]["format_name"]
    assert ours["format"]["size"] == int(theirs["format"]["size"])
    assert abs(ours["format"]["duration"] - float(theirs["format"]["duration"])) < 0.001
    assert len(ours["streams"]) == len(theirs["streams"])
    for mine, its in zip(ours["streams"], theirs["streams"], strict=True):
        assert {k: mine.get(k) for k in FIELDS} == {k: its.get(k) for k in FIELDS}
        assert int(mine.get("sample_rate") or 0) == int(its.get("sample_rate") or 0)
        assert int(mine.get("bit_rate") or 0) == int(its.get("bit_rate") or 0)


@pytest.mark.parametrize(("size", "rate"), [("320x240", 30), ("64x48", 15), ("1280x720", 25)])
async def test_sizes_and_rates_are_read(
    probes: Prober, tmp_path: Path, size: str, rate: int
) -> None:
    clip = make(tmp_path / "c.mp4", ["-c:v", "libx264", "-preset", "ultrafast"], size, rate)
    video = (await read(probes, clip))["streams"][0]
    assert f"{video['width']}x{video['height']}" == size
    assert video["avg_frame_rate"] == f"{rate}/1"


@pytest.mark.parametrize(
    "text",
    [
        b"ffconcat version 1.0\nfile '/etc/passwd'\n",
        b"#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\nhttp://127.0.0.1:9/a.ts\n",
        b"\x00" * 4096,
    ],
)
async def test_what_is_no_plain_media_is_refused(
    probes: Prober, tmp_path: Path, text: bytes
) -> None:
    (tmp_path / "input").write_bytes(text)
    with pytest.raises(Refused, match=r"the probe refused the file: (Invalid|.*whitelist)"):
        await read(probes, tmp_path / "input")


async def test_a_read_past_its_deadline_is_refused_and_others_go_on(
    probes: Prober, tmp_path: Path
) -> None:
    stuck = tmp_path / "input"
    os.mkfifo(stuck)  # opening it blocks until a writer comes: none does
    clip = make(tmp_path / "c.mp4", ["-c:v", "libx264", "-preset", "ultrafast"])
    started = time.monotonic()
    waiting = asyncio.ensure_future(read(probes, stuck, seconds=2))
    assert (await read(probes, clip))["streams"][0]["codec_name"] == "h264"
    assert time.monotonic() - started < 2
    with pytest.raises(Refused, match="past its 2 s deadline"):
        await waiting
    assert time.monotonic() - started < 4


async def test_a_cancelled_read_kills_its_child(probes: Prober, tmp_path: Path) -> None:
    stuck = tmp_path / "input"
    os.mkfifo(stuck)
    waiting = asyncio.ensure_future(read(probes, stuck, seconds=30))
    proc = await probes._started()
    for _ in range(200):  # the child is forked once the probe process reads the ask
        if children_of(proc.pid):
            break
        await asyncio.sleep(0.05)
    assert len(children_of(proc.pid)) == 1
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    for _ in range(50):
        if not children_of(proc.pid):
            break
        await asyncio.sleep(0.05)
    assert children_of(proc.pid) == []


async def test_the_memory_limit_holds(probes: Prober, tmp_path: Path) -> None:
    clip = make(tmp_path / "c.mp4", ["-c:v", "libx264", "-preset", "ultrafast"])
    assert (await read(probes, clip, memory=4 << 30))["streams"]
    with pytest.raises(Refused):
        await read(probes, clip, memory=32 << 20)  # less than libav already maps


async def test_the_probe_process_has_no_network(probes: Prober) -> None:
    proc = await probes._started()
    ours = os.readlink("/proc/self/ns/net")
    assert os.readlink(f"/proc/{proc.pid}/ns/net") != ours


async def test_a_probe_process_that_died_is_started_again(probes: Prober, tmp_path: Path) -> None:
    clip = make(tmp_path / "c.mp4", ["-c:v", "libx264", "-preset", "ultrafast"])
    first = await probes._started()
    first.kill()
    await first.wait()  # the old process's reader may not have seen its end yet
    assert (await read(probes, clip))["streams"]  # not failed by the old process's end
    assert (await probes._started()).pid != first.pid


async def test_reads_in_flight_when_the_process_dies_fail_and_are_retried(
    probes: Prober, tmp_path: Path
) -> None:
    stuck = tmp_path / "input"
    os.mkfifo(stuck)
    waiting = asyncio.ensure_future(read(probes, stuck, seconds=30))
    proc = await probes._started()
    for _ in range(200):
        if children_of(proc.pid):
            break
        await asyncio.sleep(0.05)
    proc.kill()
    with pytest.raises(RuntimeError, match="probe process ended"):
        await waiting  # not a file's fault: the job is retried
    await probes.close()  # a process the loop forgot was closed later on a closed loop
    assert proc.returncode is not None
    assert proc._transport.is_closing()  # type: ignore[attr-defined]


async def test_without_python3_av_the_node_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    program = tmp_path / "probeserver.py"
    program.write_text("import sys\nimport no_such_module_av\n")
    monkeypatch.setattr(prober, "PROGRAM", program)
    made = Prober(tmp_path)
    with pytest.raises(RuntimeError, match="python3-av"):
        await made.read(tmp_path / "x", ffmpeg.DEMUXERS, seconds=5, memory=0)
    await made.close()
