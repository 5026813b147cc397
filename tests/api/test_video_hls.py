"""HLS results (``preset:hls.variant``, ``hls.variant.audio``): the playlist and its
segments stored as the app's files through the store path, one derivative set; the status
answer's URL is the playlist's; the CDN serves the playlist and each segment with their
types and Range; ffprobe reads a local copy of the set; an overwrite of the source
removes the whole set from the CDN."""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.api.harness import Harness
from tests.api.test_video import clip, finished, stored, url

PLAYLIST_TYPE = "application/vnd.apple.mpegurl"


def parse_playlist(text: str) -> list[tuple[float, str]]:
    """A VOD media playlist's (duration, URI) pairs; asserts its frame."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    assert lines[0] == "#EXTM3U" and lines[-1] == "#EXT-X-ENDLIST", text
    assert "#EXT-X-PLAYLIST-TYPE:VOD" in lines
    target = next(int(x.split(":")[1]) for x in lines if x.startswith("#EXT-X-TARGETDURATION"))
    found = []
    for info, uri in itertools.pairwise(lines):
        if info.startswith("#EXTINF:"):
            duration = float(info[len("#EXTINF:") :].split(",")[0])
            assert duration <= target + 0.5 and not uri.startswith("#")
            found.append((duration, uri))
    return found


def cdn_path(harness: Harness, address: str) -> str:
    base = harness.settings.cdn_url()
    assert address.startswith(base), (address, base)
    return address[len(base) :]


async def fetch(harness: Harness, address: str, **kw: Any) -> tuple[int, str, bytes]:
    resp = await harness.cdn.get(cdn_path(harness, address), **kw)
    return resp.status, resp.headers.get("Content-Type", ""), await resp.read()


def ffprobe(path: Path) -> dict[str, Any]:
    argv = ["ffprobe", "-v", "error", "-protocol_whitelist", "file", "-show_format"]
    argv += ["-show_streams", "-of", "json", str(path)]
    out = subprocess.run(argv, check=True, capture_output=True).stdout
    found: dict[str, Any] = json.loads(out)
    return found


async def test_hls_variant_is_a_playlist_and_segments_on_the_cdn(
    harness: Harness, tmp_path: Path
) -> None:
    handle = await stored(harness, clip(tmp_path / "c.mp4", seconds=14, size="160x120"))
    path = url(harness, "video_convert=preset:hls.variant,width:128,height:96", handle)
    done = await finished(harness, path, seconds=120)
    assert done["status"] == "completed", done
    assert done["metadata"]["result"]["mime_type"] == PLAYLIST_TYPE
    status, kind, body = await fetch(harness, done["data"]["url"])
    assert status == 200 and kind.split(";")[0] == PLAYLIST_TYPE
    segments = parse_playlist(body.decode())
    assert len(segments) == 3  # 14 s in segments of 6 s
    thumb = await fetch(harness, done["data"]["thumb200x200"])  # a frame read through the playlist
    assert thumb[:2] == (200, "image/jpeg")
    assert abs(sum(d for d, _ in segments) - 14.0) < 0.5
    local = tmp_path / "copy"
    local.mkdir()
    total = len(body)
    text = body.decode()
    for n, (_, address) in enumerate(segments):
        status, kind, data = await fetch(harness, address)
        assert (status, kind) == (200, "video/mp2t") and data[:1] == b"\x47"  # TS sync byte
        resp = await harness.cdn.get(cdn_path(harness, address), headers={"Range": "bytes=188-375"})
        assert resp.status == 206 and await resp.read() == data[188:376]
        (local / f"s{n}.ts").write_bytes(data)
        text = text.replace(address, f"s{n}.ts")
        total += len(data)
    assert done["metadata"]["result"]["file_size"] == total
    (local / "index.m3u8").write_text(text)
    media = ffprobe(local / "index.m3u8")
    assert media["format"]["format_name"] == "hls"
    assert abs(float(media["format"]["duration"]) - 14.0) < 0.5
    codecs = {s["codec_type"]: s for s in media["streams"]}
    assert codecs["video"]["codec_name"] == "h264" and codecs["audio"]["codec_name"] == "aac"
    assert (codecs["video"]["width"], codecs["video"]["height"]) == (128, 96)


async def test_hls_audio_and_the_set_goes_with_its_source(harness: Harness, tmp_path: Path) -> None:
    handle = await stored(harness, clip(tmp_path / "c.mp4", seconds=8))
    path = url(harness, "av_convert=preset:hls.variant.audio", handle)
    done = await finished(harness, path, seconds=120)
    assert done["status"] == "completed", done
    _, _, body = await fetch(harness, done["data"]["url"])
    addresses = [done["data"]["url"], *(a for _, a in parse_playlist(body.decode()))]
    assert len(addresses) == 3
    local = tmp_path / "copy"
    local.mkdir()
    text = body.decode()
    for n, address in enumerate(addresses[1:]):
        (local / f"s{n}.ts").write_bytes((await fetch(harness, address))[2])
        text = text.replace(address, f"s{n}.ts")
    (local / "index.m3u8").write_text(text)
    assert [s["codec_type"] for s in ffprobe(local / "index.m3u8")["streams"]] == ["audio"]
    params = harness.policy(harness.open_app, call=["write"], handle=handle)
    resp = await harness.api.post(
        f"/api/file/{handle}", params=params, data=clip(tmp_path / "d.mp4", seconds=1)
    )
    assert resp.status == 200, await resp.text()
    deadline = time.monotonic() + 10
    while any([(await fetch(harness, a))[0] != 404 for a in addresses]):
        assert time.monotonic() < deadline, "a file of the old version's set is still served"
        await asyncio.sleep(0.1)


@pytest.mark.parametrize(
    ("preset", "failing"),
    [
        ("hls.variant", "-00001.ts"),  # the second segment
        ("hls.variant.audio", "-00001.ts"),
        ("h264", "-thumb100x100.jpg"),  # a still, stored beside the result at once
    ],
)
async def test_a_failed_store_leaves_no_part_of_a_set(
    harness: Harness, tmp_path: Path, preset: str, failing: str
) -> None:
    video = harness.parts.video
    made: list[str] = []  # the handle of every store that succeeded
    attempt: list[str] = []  # what had been stored of the set when its one store failed
    failed = asyncio.Event()
    real = video.store

    async def one_fails(*args: Any, **kw: Any) -> Any:
        if args[3].filename.endswith(failing) and not failed.is_set():
            # The set's stores may run at once: fail once another part is in (the
            # retry, 5 s later, stores the whole set).
            deadline = time.monotonic() + 30
            while not made and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            attempt.extend(made)
            failed.set()
            raise RuntimeError("the storage went away")
        row = await real(*args, **kw)
        made.append(row.handle)
        return row

    video.store = one_fails
    handle = await stored(harness, clip(tmp_path / "c.mp4", seconds=8))
    path = url(harness, f"video_convert=preset:{preset}", handle)
    deadline = time.monotonic() + 60
    while not failed.is_set():
        assert time.monotonic() < deadline, "the store did not fail"
        await asyncio.sleep(0.1)
        await harness.cdn.get(path)
    assert attempt, "no other part of the set was stored"
    while not await all_gone(harness, attempt):
        assert time.monotonic() < deadline, "a stored part of the failed set is still served"
        await asyncio.sleep(0.1)
    video.store = real


async def all_gone(harness: Harness, handles: list[str]) -> bool:
    return all([(await harness.cdn.get(f"/{h}")).status == 404 for h in handles])
