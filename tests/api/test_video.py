"""``video_convert`` / ``av_convert`` through CDN URLs (processing/videojobs.py): the first
answer is a job in the hosted shape, the same URL answers its status until completed
with the result's URL; results are real media (ffprobe reads them); hostile inputs end
in a failed status with a reason, never a hang or a network connection."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import pyvips

from tests.api.harness import Harness

ENDED = ("completed", "failed")


def clip(path: Path, *, seconds: int = 2, size: str = "160x120", video: bool = True) -> bytes:
    """A tiny clip from ffmpeg's own sources: a test pattern and a sine tone."""
    sources = ["-f", "lavfi", "-i", f"sine=frequency=440:duration={seconds}"]
    codecs = ["-c:a", "aac"]
    if video:
        pattern = f"testsrc=size={size}:rate=10:duration={seconds}"
        sources = ["-f", "lavfi", "-i", pattern, *sources]
        codecs = ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", *codecs]
    subprocess.run(
        ["ffmpeg", "-v", "error", "-y", *sources, *codecs, "-shortest", str(path)], check=True
    )
    return path.read_bytes()


def probed(data: bytes, tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "probed"
    path.write_bytes(data)
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-show_format", "-show_streams", "-of", "json", str(path)],
        check=True,
        capture_output=True,
    ).stdout
    found: dict[str, Any] = json.loads(out)
    return found


async def stored(harness: Harness, data: bytes, filename: str = "clip.mp4") -> str:
    record = await harness.store(data, filename=filename)
    return str(record["handle"])


def url(harness: Harness, task: str, handle: str) -> str:
    return f"/{harness.open_app.api_key}/{task}/{handle}"


async def status(harness: Harness, path: str) -> dict[str, Any]:
    resp = await harness.cdn.get(path)
    assert resp.status == 200, await resp.text()
    assert resp.headers["Cache-Control"] == "no-store"
    found: dict[str, Any] = await resp.json()
    return found


async def finished(harness: Harness, path: str, seconds: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = await status(harness, path)
        if found["status"] in ENDED:
            return found
        assert found["status"] in ("pending", "started")
        await asyncio.sleep(0.1)
    raise AssertionError(f"{path} did not finish in {seconds} s")


async def result_bytes(harness: Harness, answer: dict[str, Any]) -> bytes:
    handle = answer["data"]["url"].rsplit("/", 1)[-1]
    resp = await harness.cdn.get(f"/{handle}")
    assert resp.status == 200
    return await resp.read()


async def test_thumbnail_first_pending_then_completed_in_the_hosted_shape(
    harness: Harness, tmp_path: Path
) -> None:
    handle = await stored(harness, clip(tmp_path / "c.mp4", seconds=3, size="192x108"))
    path = url(harness, "video_convert=preset:thumbnail,thumbnail_offset:2", handle)
    first = await status(harness, path)
    assert first["status"] in ("pending", "started") and "data" not in first
    assert len(first["uuid"]) == 32 and abs(int(first["timestamp"]) - time.time()) < 60
    done = await finished(harness, path)
    assert done["status"] == "completed", done
    assert done["uuid"] == first["uuid"] and done["timestamp"] == first["timestamp"]
    assert done["data"]["url"].startswith(harness.settings.cdn_url())
    made = await result_bytes(harness, done)
    assert done["metadata"]["result"] == {
        "mime_type": "image/jpeg",
        "extname": ".jpg",
        "width": 192,
        "height": 108,
        "file_size": len(made),
    }
    assert done["metadata"]["source"]["width"] == 192
    assert done["metadata"]["source"]["duration"] == 3000
    image = pyvips.Image.new_from_buffer(made, "")
    assert (image.width, image.height, image.get("vips-loader")) == (192, 108, "jpegload_buffer")


async def test_thumbnail_as_png_at_a_given_size(harness: Harness, tmp_path: Path) -> None:
    handle = await stored(harness, clip(tmp_path / "c.mp4"))
    task = "video_convert=preset:thumbnail,extname:.png,width:80,height:60"
    done = await finished(harness, url(harness, task, handle))
    image = pyvips.Image.new_from_buffer(await result_bytes(harness, done), "")
    assert (image.width, image.height, image.get("vips-loader")) == (80, 60, "pngload_buffer")
    assert (done["metadata"]["result"]["width"], done["metadata"]["result"]["height"]) == (80, 60)
    assert done["metadata"]["result"]["mime_type"] == "image/png"


@pytest.mark.parametrize(
    ("preset", "codec", "muxer"),
    [("h264", "h264", "mov,mp4,m4a,3gp,3g2,mj2"), ("webm", "vp8", "matroska,webm")],
)
async def test_web_presets_make_playable_files(
    harness: Harness, tmp_path: Path, preset: str, codec: str, muxer: str
) -> None:
    handle = await stored(harness, clip(tmp_path / "c.mp4", seconds=2))
    task = f"video_convert=preset:{preset},width:96,height:96,aspect_mode:letterbox"
    done = await finished(harness, url(harness, task, handle))
    assert done["status"] == "completed", done
    media = probed(await result_bytes(harness, done), tmp_path)
    [video] = [s for s in media["streams"] if s["codec_type"] == "video"]
    assert (video["codec_name"], video["width"], video["height"]) == (codec, 96, 96)
    assert media["format"]["format_name"] == muxer
    assert abs(float(media["format"]["duration"]) - 2.0) < 0.2
    assert any(s["codec_type"] == "audio" for s in media["streams"])


async def test_audio_presets_and_the_python_sdk_name(harness: Harness, tmp_path: Path) -> None:
    handle = await stored(harness, clip(tmp_path / "a.m4a", video=False), "tone.m4a")
    done = await finished(harness, url(harness, "av_convert=preset:mp3,audio_bitrate:64", handle))
    assert done["status"] == "completed", done
    media = probed(await result_bytes(harness, done), tmp_path)
    assert [s["codec_name"] for s in media["streams"]] == ["mp3"]
    assert done["metadata"]["result"]["audio_bitrate"] == 64
    # A video preset on a file without video fails with the reason.
    failed = await finished(harness, url(harness, "video_convert=preset:h264", handle))
    assert failed["status"] == "failed" and "video stream" in failed["message"]


async def test_the_same_conversion_asked_twice_is_one_job(harness: Harness, tmp_path: Path) -> None:
    handle = await stored(harness, clip(tmp_path / "c.mp4"))
    # Options in another order and spelled with the SDK's other name: one normalised task.
    a = url(harness, "video_convert=width:64,preset:thumbnail", handle)
    b = url(harness, "av_convert=preset:thumbnail,width:64", handle)
    answers = await asyncio.gather(*(status(harness, p) for p in (a, b, a, b)))
    assert len({x["uuid"] for x in answers}) == 1
    done_a, done_b = await finished(harness, a), await finished(harness, b)
    assert done_a == done_b


@pytest.mark.parametrize(
    "task",
    [
        "video_convert=width:5000",
        "video_convert=preset:hls.bogus",
        "video_convert=preset:hls.variant,extname:.mp4",
        "video_convert=audio_channels:13",
        "video_convert=clip_offset:25:00:00",
        "video_convert=extname:mp4;rm",
        "video_convert=watermark_top:5",
        "video_convert=preset:mp3,watermark_url:x",
        "video_convert=watermark_url:x,watermark_left:1,watermark_right:1",
        "video_convert=watermark_url:x,watermark_width:0",
        "video_convert=watermark_url:x,watermark_top:10000",
        "av_convert=bogus:1",
        "resize=width:10/video_convert=preset:h264",
    ],
)
async def test_bad_options_are_a_400_before_a_job(
    harness: Harness, tmp_path: Path, task: str
) -> None:
    resp = await harness.cdn.get(url(harness, task, "nosuchhandle0000000x"))
    assert resp.status == 400, await resp.text()
    assert (await resp.json())["error"]["code"] in ("INVALID_PARAMETER", "UNSUPPORTED_TASK")


def listener() -> tuple[socket.socket, int]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.setblocking(False)
    return sock, sock.getsockname()[1]


def connections(sock: socket.socket) -> int:
    count = 0
    while True:
        try:
            conn, _ = sock.accept()
        except BlockingIOError:
            return count
        conn.close()
        count += 1


async def test_hostile_media_fails_with_a_reason_and_reaches_nothing(
    harness: Harness, tmp_path: Path
) -> None:
    sock, port = listener()
    whole = clip(tmp_path / "c.mp4", seconds=3)
    hostile = {
        "truncated.mp4": whole[: len(whole) // 3],
        "text.mp4": b"this is not a video at all\n" * 20,
        "net.m3u8": f"#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\nhttp://127.0.0.1:{port}/a.ts\n"
        "#EXT-X-ENDLIST\n".encode(),
        "local.mp4": b"#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\nfile:///etc/passwd\n"
        b"#EXT-X-ENDLIST\n",
        "concat.mp4": b"ffconcat version 1.0\nfile '/etc/passwd'\n",
        "ref.mp4": f"ffconcat version 1.0\nfile 'http://127.0.0.1:{port}/x.mp4'\n".encode(),
    }
    try:
        handles = {name: await stored(harness, data, name) for name, data in hostile.items()}
        paths = {n: url(harness, "video_convert=preset:h264", h) for n, h in handles.items()}
        started = time.monotonic()
        answers = {n: await finished(harness, p, seconds=30) for n, p in paths.items()}
        assert time.monotonic() - started < 30
        for name, found in answers.items():
            assert found["status"] == "failed", (name, found)
            assert found["message"] and "data" not in found, (name, found)
        assert connections(sock) == 0
    finally:
        sock.close()


async def test_an_overwrite_drops_the_job_and_its_result(harness: Harness, tmp_path: Path) -> None:
    handle = await stored(harness, clip(tmp_path / "c.mp4"))
    path = url(harness, "video_convert=preset:thumbnail", handle)
    done = await finished(harness, path)
    result = done["data"]["url"].rsplit("/", 1)[-1]
    params = harness.policy(harness.open_app, call=["write"], handle=handle)
    new = clip(tmp_path / "d.mp4", seconds=1)
    resp = await harness.api.post(f"/api/file/{handle}", params=params, data=new)
    assert resp.status == 200, await resp.text()
    deadline = time.monotonic() + 10
    while (await harness.cdn.get(f"/{result}")).status != 404:
        assert time.monotonic() < deadline, "the old version's result is still served"
        await asyncio.sleep(0.1)
    again = await status(harness, path)
    assert again["uuid"] != done["uuid"]  # the new version is a new job


async def test_a_reason_names_no_server_path(harness: Harness) -> None:
    playlist = b"#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\nfile:///etc/passwd\n#EXT-X-ENDLIST\n"
    handle = await stored(harness, playlist, "x.mp4")
    failed = await finished(harness, url(harness, "video_convert=preset:webm", handle))
    assert failed["status"] == "failed"
    message = failed["message"]
    assert "Format not on whitelist" in message and str(harness.settings.data_dir) not in message


async def test_an_app_with_security_needs_a_convert_policy(
    harness: Harness, tmp_path: Path
) -> None:
    app = harness.secure_app
    handle = str((await harness.store(clip(tmp_path / "c.mp4"), app=app))["handle"])
    path = f"/{app.api_key}/video_convert=preset:thumbnail/{handle}"
    assert (await harness.cdn.get(path)).status in (401, 403)
    policy = harness.policy(app, call=["read"])
    assert (await harness.cdn.get(path, params=policy)).status == 403
    policy = harness.policy(app, call=["convert"])
    deadline = time.monotonic() + 60
    while (found := await (await harness.cdn.get(path, params=policy)).json())[
        "status"
    ] not in ENDED:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.1)
    assert found["status"] == "completed", found  # the worker stored it for the app


async def test_a_stopped_process_job_folders_are_swept_when_old(harness: Harness) -> None:
    folder = harness.settings.data_dir / "tmp" / "video"
    old, young = folder / "old-job", folder / "young-job"
    for path in (old, young):
        path.mkdir(parents=True, exist_ok=True)
        (path / "input").write_bytes(b"x")
    os.utime(old, (0, 0))
    video = harness.parts.video
    await video.close()
    video.start()
    assert not old.exists() and young.exists()


async def test_metrics_count_the_jobs(harness: Harness, tmp_path: Path) -> None:
    handle = await stored(harness, clip(tmp_path / "c.mp4"))
    await finished(harness, url(harness, "video_convert=preset:thumbnail,width:32", handle))
    text = await harness.metrics()
    assert 'stowage_video_jobs_total{outcome="completed"}' in text
    assert "stowage_video_job_seconds_count" in text
