"""``video_convert``'s options as an ffmpeg plan (processing/video.py) and the job
processes' limits (processing/ffmpeg.py): the deadline kills the whole process group,
the address-space limit holds, and only plain media containers are opened."""

from __future__ import annotations

import asyncio
import functools
import os
import re
import subprocess
import time
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stowage import errors
from stowage.processing import ffmpeg, grammar, video
from stowage.processing.ffmpeg import Limits, MediaRefused
from stowage.processing.prober import Prober

LIMITS = Limits(
    seconds=5,
    memory=2 << 30,
    output_bytes=1 << 30,
    max_duration=60,
    max_dimension=640,
    max_streams=4,
)


def plan(segment: str) -> video.Plan:
    return video.plan(grammar.parse_task(segment))


#: Digits of other scripts, by value: int() reads them all ("\uff11" is 1).
DIGITS = {
    n: [chr(c) for c in range(0x80, 0x30000) if unicodedata.digit(chr(c), None) == n]
    for n in range(10)
}


@settings(max_examples=40, deadline=None)
@given(
    name=st.sampled_from(["clip_length", "clip_offset"]),
    clock=st.sampled_from(["1", "59", "1:30", "00:01:30", "12.5", "0:5"]),
    data=st.data(),
)
def test_a_clock_of_another_scripts_digits_is_refused(
    name: str, clock: str, data: st.DataObject
) -> None:
    """``clip_length:\uff11`` (a fullwidth 1) made a job of a one-second clip."""
    at = data.draw(st.sampled_from([i for i, c in enumerate(clock) if c.isdigit()]))
    other = data.draw(st.sampled_from(DIGITS[int(clock[at])]))
    plan(f"video_convert={name}:{clock}")  # the ASCII clock is one
    with pytest.raises(errors.InvalidParameter) as refused:
        plan(f"video_convert={name}:{clock[:at]}{other}{clock[at + 1 :]}")
    assert refused.value.details["parameter"] == f"video_convert.{name}"
    blank = data.draw(st.sampled_from(["\u00a0", "\u2028", "\u3000", "\x85"]))
    with pytest.raises(errors.InvalidParameter):  # nor is a blank but an ASCII space or tab
        plan(f"video_convert={name}:{blank}{clock}")


@given(st.integers(0, 23), st.integers(0, 59), st.integers(0, 59))
def test_clock_times_are_seconds(hours: int, minutes: int, seconds: int) -> None:
    made = plan(f"video_convert=clip_offset:{hours:02d}:{minutes:02d}:{seconds:02d},clip_length:1")
    assert made.seek == hours * 3600 + minutes * 60 + seconds
    assert plan(f"video_convert=clip_offset:{minutes}:{seconds:02d}").seek == minutes * 60 + seconds
    assert made.argv("IN", "OUT")[:4] == ["-ss", f"{made.seek:g}", "-i", "IN"]


@pytest.mark.parametrize("bad", ["24:00:00", "1:60:00", "00:00:75", "ab", "-3", "1:2:3:4"])
def test_bad_clock_times_are_a_400(bad: str) -> None:
    with pytest.raises(errors.InvalidParameter) as caught:
        plan(f'video_convert=clip_offset:"{bad}"')
    assert caught.value.details["parameter"] == "video_convert.clip_offset"


def test_hls_presets_write_segments_beside_their_playlist() -> None:
    made = plan("video_convert=preset:hls.variant")
    argv = made.argv("file:/job/input", "file:/job/output.m3u8")
    assert (made.extension, made.mimetype) == ("m3u8", "application/vnd.apple.mpegurl")
    assert argv[argv.index("-f") + 1] == "hls" and argv[-1] == "file:/job/output.m3u8"
    assert argv[argv.index("-hls_segment_filename") + 1] == "file:/job/segment%05d.ts"
    assert argv[argv.index("-hls_playlist_type") + 1] == "vod"
    assert "-force_key_frames" in argv  # every segment starts on a keyframe
    audio = plan("av_convert=preset:hls.variant.audio").argv("IN", "d/OUT")
    assert "-vn" in audio and "-force_key_frames" not in audio
    with pytest.raises(errors.InvalidParameter):
        plan("video_convert=preset:hls.variant,extname:.mp4")


@given(st.integers(0, 9999), st.integers(0, 9999), st.booleans(), st.booleans())
def test_watermark_offsets_place_the_overlay(a: int, b: int, right: bool, bottom: bool) -> None:
    across, down = ("right", "bottom") if right and bottom else ("left", "top")
    if right != bottom:
        across, down = ("right", "top") if right else ("left", "bottom")
    made = plan(
        f"video_convert=width:64,watermark_url:x,watermark_{across}:{a},watermark_{down}:{b}"
    )
    argv = made.argv("IN", "OUT", "MARK")
    assert argv[argv.index("MARK") - 1] == "-i" and "-vf" not in argv  # all in one graph
    graph = argv[argv.index("-filter_complex") + 1]
    x = f"W-w-{a}" if across == "right" else str(a)
    y = f"H-h-{b}" if down == "bottom" else str(b)
    assert graph.endswith(f"[frame][mark]overlay={x}:{y}[v]") and graph.startswith("[0:v]scale=64:")
    assert argv[argv.index("-map") + 1] == "[v]" and "0:a?" in argv


@pytest.mark.parametrize(
    "bad",
    [
        "watermark_left:1,watermark_right:1",
        "watermark_top:1,watermark_bottom:2",
        "watermark_height:0",
    ],
)
def test_watermark_options_are_range_checked(bad: str) -> None:
    with pytest.raises(errors.InvalidParameter):
        plan(f"video_convert=watermark_url:x,{bad}")


def test_audio_presets_drop_video_and_thumbnails_take_one_frame() -> None:
    mp3 = plan("video_convert=preset:mp3,audio_channels:1,audio_sample_rate:22050")
    assert "-vn" in mp3.options and _after(mp3.options, "-ac") == ["-ac", "1"]
    thumb = plan("video_convert=preset:thumbnail,thumbnail_offset:7,width:80")
    assert thumb.seek == 7 and "-an" in thumb.options and "1" in _after(thumb.options, "-frames:v")
    assert (thumb.extension, thumb.mimetype) == ("jpg", "image/jpeg")
    png = plan("video_convert=preset:thumbnail,extname:.PNG")
    assert (png.extension, png.mimetype) == ("png", "image/png")


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("crop", "force_original_aspect_ratio=increase"),
        ("letterbox", "pad=100:50"),
        ("preserve", "force_original_aspect_ratio=decrease"),
        ("constrain", "min(100,iw)"),
    ],
)
def test_aspect_modes_are_filters(mode: str, expected: str) -> None:
    made = plan(f"video_convert=width:100,height:50,aspect_mode:{mode}")
    assert expected in _after(made.options, "-vf")[1]


def _after(options: tuple[str, ...], flag: str) -> list[str]:
    at = options.index(flag)
    return list(options[at : at + 2])


@functools.cache
def encoder_rates(encoder: str) -> tuple[int, ...]:
    """The sample rates ffmpeg's ``encoder`` takes, as ffmpeg lists them (none: any)."""
    shown = subprocess.run(
        ["ffmpeg", "-hide_banner", "-h", f"encoder={encoder}"], capture_output=True, text=True
    ).stdout
    found = re.search(r"Supported sample rates:([0-9 ]+)", shown)
    return tuple(int(n) for n in found[1].split()) if found else ()


SINE = ("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "sine=duration=0.1")


@settings(max_examples=30, deadline=None)
@given(
    rate=st.integers(1, 99999),
    preset=st.sampled_from(["h264", "webm", "webm.hi", "hls.variant", "mp3", "aac", "ogg"]),
    codec=st.sampled_from(["", ",audio_codec:aac", ",audio_codec:mp3", ",audio_codec:opus"]),
)
def test_every_sample_rate_the_schema_allows_makes_one_the_encoder_takes(
    rate: int, preset: str, codec: str
) -> None:
    """The schema allows 1-99999 Hz; AAC takes 7350-96000 in steps, Opus five rates: the
    nearest one the encoder takes is asked for (4000 was a 400, 12345 a failed job)."""
    made = plan(f"video_convert=preset:{preset},audio_sample_rate:{rate}{codec}").options
    encoder, ar = _after(made, "-c:a")[1], int(_after(made, "-ar")[1])
    rates = encoder_rates(encoder)
    assert ar in rates if rates else ar == rate
    assert all(abs(ar - rate) <= abs(other - rate) for other in rates)
    encoded = subprocess.run(
        [*SINE, "-c:a", encoder, "-ar", str(ar), "-f", "null", "-"],
        capture_output=True,
        text=True,
    )
    assert encoded.returncode == 0, (encoder, ar, encoded.stderr)


async def test_the_deadline_kills_the_process_group(tmp_path: Path) -> None:
    started = time.monotonic()
    with pytest.raises(MediaRefused, match="deadline"):
        await ffmpeg.run(["sh", "-c", "sleep 31.7 & sleep 31.7"], LIMITS, cwd=tmp_path, seconds=0.5)
    assert time.monotonic() - started < 3
    await asyncio.sleep(0.1)
    assert not [p for p in os.listdir("/proc") if p.isdigit() and _is_our_sleep(p)]


def _is_our_sleep(pid: str) -> bool:
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        return cmd == b"sleep\x0031.7\x00" and os.getsid(int(pid)) != os.getsid(0)
    except OSError:
        return False


async def test_the_memory_limit_holds(tmp_path: Path) -> None:
    small = Limits(5, 64 << 20, 1 << 20, 60, 640, 4)
    grab = ["python3", "-c", "b = bytearray(256 << 20)"]
    with pytest.raises(MediaRefused, match="refused"):
        await ffmpeg.run(grab, small, cwd=tmp_path, seconds=5)


async def test_only_plain_containers_are_probed(tmp_path: Path) -> None:
    source = tmp_path / "input"
    source.write_bytes(b"ffconcat version 1.0\nfile '/etc/passwd'\n")
    prober = Prober(tmp_path)
    try:
        with pytest.raises(MediaRefused, match=r"Format not on whitelist"):
            await ffmpeg.probe(source, LIMITS, prober)
    finally:
        await prober.close()


@pytest.mark.parametrize(
    ("task", "crf"),
    [
        ("video_convert=preset:h264,two_pass:true,video_bitrate:300", False),
        ("video_convert=preset:webm,two_pass:true", False),  # the preset's own -b:v 1M
        ("video_convert=preset:webm.hi,two_pass:true,video_bitrate:300", True),  # VP9's CQ
    ],
)
def test_two_pass_with_a_bitrate_is_two_runs(task: str, crf: bool) -> None:
    made = plan(task)
    assert made.two_pass
    first = made.argv("file:/j/input", "file:/j/pass1", pass_=1, passlog="/j/passlog")
    second = made.argv("file:/j/input", "file:/j/out", pass_=2, passlog="/j/passlog")
    for n, argv in ((1, first), (2, second)):
        assert argv[argv.index("-pass") + 1] == str(n)
        assert argv[argv.index("-passlogfile") + 1] == "/j/passlog"
        assert ("-crf" in argv) is crf  # x264 refuses a CRF in a second pass
    assert first[-3:] == ["-f", "null", "file:/j/pass1"] and "-an" in first
    assert second[-1] == "file:/j/out" and "-an" not in second


@pytest.mark.parametrize(
    "task",
    [
        "video_convert=preset:h264,two_pass:true",  # CRF: constant quality, one pass
        "video_convert=preset:webm.hi,two_pass:true",  # -b:v 0: constant quality
        "video_convert=preset:thumbnail,two_pass:true",
        "video_convert=preset:webm,two_pass:false",
    ],
)
def test_two_pass_without_a_bitrate_is_one_run(task: str) -> None:
    made = plan(task)
    assert not made.two_pass
    assert "-pass" not in made.argv("IN", "d/OUT")


def _clock_spellings(millis: int) -> list[str]:
    """Every way the docs let a time in milliseconds be written."""
    seconds, ms = divmod(millis, 1000)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    fraction = f".{ms:03d}" if ms else ""
    plain = f"{seconds}{fraction}"
    found = [plain, f"00{plain}", f"{plain}.0" if not ms else f"{plain}00", f"{millis}e-3"]
    found += [
        f"{hours:02d}:{minutes:02d}:{secs:02d}{fraction}",
        f"{hours}:{minutes}:{secs}{fraction}",
    ]
    if hours == 0:
        found.append(f"{minutes:02d}:{secs:02d}{fraction}")
    return found


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 86_399_000), st.sampled_from(["clip_length", "clip_offset"]))
def test_one_time_in_any_spelling_is_one_job(millis: int, option: str) -> None:
    """``clip_length:5``, ``05``, ``5.0``, ``00:00:05`` and ``0:05`` made five jobs of one
    conversion (the job's key is the normalised task)."""
    keys = {
        grammar.parse_task(f"video_convert=preset:h264,{option}:{text}").key()
        for text in _clock_spellings(millis)
    }
    assert len(keys) == 1, (millis, keys)
    task = grammar.parse_task(f"video_convert=preset:h264,{option}:{_clock_spellings(millis)[0]}")
    assert task.get(option) == pytest.approx(millis / 1000)


@pytest.mark.parametrize("name", ["mp4", "webm", "mov", "png"])
def test_one_extension_in_any_spelling_is_one_job(name: str) -> None:
    spellings = [name, f".{name}", name.upper(), f".{name.upper()}", name.capitalize()]
    preset = "thumbnail" if name == "png" else "h264"
    keys = {
        grammar.parse_task(f"video_convert=preset:{preset},extname:{s}").key() for s in spellings
    }
    assert len(keys) == 1, keys
