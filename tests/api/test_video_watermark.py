"""Watermarks on video (``watermark_url`` and its offsets and size): the image comes from
a handle of the app or a URL through the guarded fetcher, and reaches ffmpeg only as a
file of the job folder; the mark is where the offsets put it, at the size asked."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pyvips
from aiohttp import web
from aiohttp.test_utils import TestServer

from tests.api.harness import Harness
from tests.api.test_video import connections, finished, listener, result_bytes, stored, url

RED = [255, 0, 0]


def black_clip(path: Path) -> bytes:
    """One second of black 160x120 video with a tone: a mark shows against it."""
    sources = ["-f", "lavfi", "-i", "color=c=black:size=160x120:rate=10:duration=1"]
    sources += ["-f", "lavfi", "-i", "sine=duration=1"]
    codecs = ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest"]
    subprocess.run(["ffmpeg", "-v", "error", "-y", *sources, *codecs, str(path)], check=True)
    return path.read_bytes()


def red_png() -> bytes:
    image = (pyvips.Image.black(8, 6) + RED).cast("uchar").copy(interpretation="srgb")
    data: bytes = image.write_to_buffer(".png")
    return data


def mean(image: pyvips.Image, left: int, top: int, width: int, height: int) -> list[float]:
    area = image.crop(left, top, width, height)
    return [area[band].avg() for band in range(3)]


def is_red(found: list[float]) -> bool:
    return found[0] > 180 and found[1] < 70 and found[2] < 70


def is_black(found: list[float]) -> bool:
    return max(found) < 40


@pytest.fixture
async def image_server() -> AsyncIterator[tuple[str, socket.socket, int]]:
    """Serves /mark.png and /hostile.png (a playlist naming a listener), on loopback."""
    sock, port = listener()
    playlist = f"#EXTM3U\n#EXTINF:1,\nhttp://127.0.0.1:{port}/x.ts\n#EXT-X-ENDLIST\n".encode()
    bodies = {"/mark.png": red_png(), "/hostile.png": playlist}

    async def serve(request: web.Request) -> web.Response:
        return web.Response(body=bodies[request.path], content_type="image/png")

    app = web.Application()
    app.router.add_get("/{name}", serve)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        yield str(server.make_url("")), sock, port
    finally:
        await server.close()
        sock.close()


async def test_a_handle_watermark_lands_where_its_offsets_put_it(
    harness: Harness, tmp_path: Path
) -> None:
    handle = await stored(harness, black_clip(tmp_path / "b.mp4"))
    mark = await stored(harness, red_png(), "mark.png")
    plain = "video_convert=preset:thumbnail,extname:.png"
    marked = f"{plain},watermark_url:{mark},watermark_right:10,watermark_bottom:10"
    marked += ",watermark_width:40,watermark_height:30"
    images = []
    for task in (plain, marked):
        done = await finished(harness, url(harness, task, handle))
        assert done["status"] == "completed", done
        images.append(pyvips.Image.new_from_buffer(await result_bytes(harness, done), ""))
    before, after = images
    # The mark: 40x30 with its right edge 10 px from the frame's, its bottom 10 px up.
    assert is_black(mean(before, 112, 82, 36, 26)) and is_red(mean(after, 112, 82, 36, 26))
    for left, top in ((0, 0), (100, 0), (0, 70), (152, 112), (100, 72)):  # outside it
        assert is_black(mean(after, left, top, 8, 8)), (left, top)


async def test_a_url_watermark_on_a_video_keeps_its_audio(
    harness: Harness, tmp_path: Path, image_server: tuple[str, socket.socket, int]
) -> None:
    base, _, _ = image_server
    handle = await stored(harness, black_clip(tmp_path / "b.mp4"))
    task = f'video_convert=preset:h264,watermark_url:"{base}/mark.png",watermark_top:4'
    task += ",watermark_left:6"
    done = await finished(harness, url(harness, task, handle))
    assert done["status"] == "completed", done
    assert done["metadata"]["result"]["audio_codec"] == "aac"
    (tmp_path / "r.mp4").write_bytes(await result_bytes(harness, done))
    frame = tmp_path / "f.png"
    first = ["-i", str(tmp_path / "r.mp4"), "-frames:v", "1", str(frame)]
    subprocess.run(["ffmpeg", "-v", "error", "-y", *first], check=True)
    image = pyvips.Image.new_from_file(str(frame))
    assert is_red(mean(image, 7, 5, 6, 4))  # the 8x6 mark at (6, 4), its own size
    assert is_black(mean(image, 20, 20, 20, 20))


async def test_a_hostile_watermark_fails_and_reaches_nothing(
    harness: Harness, tmp_path: Path, image_server: tuple[str, socket.socket, int]
) -> None:
    base, sock, _ = image_server
    handle = await stored(harness, black_clip(tmp_path / "b.mp4"))
    task = f'video_convert=preset:thumbnail,watermark_url:"{base}/hostile.png"'
    failed = await finished(harness, url(harness, task, handle))
    assert failed["status"] == "failed" and "refused" in failed["message"], failed
    assert connections(sock) == 0  # the playlist's address was never opened


async def test_a_watermark_of_another_app_or_a_bad_url_is_a_400(
    harness: Harness, tmp_path: Path
) -> None:
    handle = await stored(harness, black_clip(tmp_path / "b.mp4"))
    other = (await harness.store(red_png(), app=harness.secure_app))["handle"]
    for source in (other, '"ftp://127.0.0.1/x.png"', "not-a-handle"):
        resp = await harness.cdn.get(url(harness, f"video_convert=watermark_url:{source}", handle))
        assert resp.status == 400, await resp.text()
        assert (await resp.json())["error"]["code"] == "INVALID_PARAMETER"
