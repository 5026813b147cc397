"""``two_pass`` runs ffmpeg twice (the statistics in the job folder) and makes a playable
file at the asked bitrate; ``force:true`` re-runs a conversion that ended (a new job, the
old result removed), not one that is running or ended a moment ago."""

from __future__ import annotations

from asyncio.subprocess import Process
from pathlib import Path
from typing import Any

import pytest

from stowage.processing import ffmpeg, videojobs, videorun
from tests.api.harness import Harness
from tests.api.test_video import clip, finished, probed, result_bytes, status, stored, url


@pytest.mark.parametrize(("preset", "codec"), [("h264", "h264"), ("webm", "vp8")])
async def test_two_pass_runs_ffmpeg_twice_and_makes_a_playable_file(
    harness: Harness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, preset: str, codec: str
) -> None:
    passes: list[str] = []
    real = ffmpeg.spawn

    async def spy(argv: list[str], *args: Any, **kwargs: Any) -> Process:
        if argv[0] == "ffmpeg" and any(a.endswith("/input") for a in argv):  # not the stills'
            passes.append(argv[argv.index("-pass") + 1] if "-pass" in argv else "one")
        return await real(argv, *args, **kwargs)

    monkeypatch.setattr(ffmpeg, "spawn", spy)
    handle = await stored(harness, clip(tmp_path / "c.mp4"))
    task = f"video_convert=preset:{preset},two_pass:true,video_bitrate:200,width:96"
    done = await finished(harness, url(harness, task, handle))
    assert done["status"] == "completed", done
    assert passes == ["1", "2"]
    media = probed(await result_bytes(harness, done), tmp_path)
    [video] = [s for s in media["streams"] if s["codec_type"] == "video"]
    assert (video["codec_name"], video["width"]) == (codec, 96)
    assert any(s["codec_type"] == "audio" for s in media["streams"])  # pass 2 has the audio
    assert abs(float(media["format"]["duration"]) - 2.0) < 0.2


async def test_force_reruns_an_ended_job_as_a_new_one(
    harness: Harness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    handle = await stored(harness, clip(tmp_path / "c.mp4"))
    plain = url(harness, "video_convert=preset:thumbnail,width:64", handle)
    forced = url(harness, "video_convert=force:true,preset:thumbnail,width:64", handle)
    first = await finished(harness, plain)
    assert first["status"] == "completed", first
    # Just ended: a forced URL answers the same job (a client reading it once more).
    assert (await status(harness, forced))["uuid"] == first["uuid"]
    monkeypatch.setattr(videojobs, "RERUN_AFTER", 0.0)
    again = await status(harness, forced)
    assert again["uuid"] != first["uuid"] and again["status"] in ("pending", "started")
    # The plain URL answers the new job too (one conversion), which completes anew.
    assert (await status(harness, plain))["uuid"] == again["uuid"]
    second = await finished(harness, plain)
    assert second["status"] == "completed" and second["uuid"] == again["uuid"]
    assert second["data"]["url"] != first["data"]["url"]
    old = first["data"]["url"].rsplit("/", 1)[-1]
    assert (await harness.cdn.get(f"/{old}")).status == 404  # the old result is removed
    # Without force, an ended job is answered as it is.
    assert (await status(harness, plain))["uuid"] == again["uuid"]


async def test_a_running_job_answers_its_progress_from_ffmpeg(
    harness: Harness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ffmpeg's ``-progress`` report reaches the registry row, and the status answer (on
    any node: it is read from the row) shows it as ``data.progress`` while started."""
    handle = await stored(harness, clip(tmp_path / "c.mp4", seconds=4))
    path = url(harness, "video_convert=preset:webm,two_pass:true,video_bitrate:100", handle)
    registry = harness.parts.registry
    real, written, answered = registry.video_progress, [], []

    async def spy(job_id: int, worker: str, percent: float) -> bool:
        held = await real(job_id, worker, percent)
        written.append(percent)
        answered.append(await status(harness, path))
        return bool(held)

    monkeypatch.setattr(videorun, "PROGRESS_EVERY", 0.0)
    monkeypatch.setattr(registry, "video_progress", spy)
    done = await finished(harness, path)
    assert done["status"] == "completed" and "progress" not in done["data"]
    assert written == sorted(written) and written[0] >= 0 and written[-1] <= 100
    # Two passes: the first reports up to half, the second the rest.
    assert any(p <= 50 for p in written) and any(p > 50 for p in written)
    for percent, answer in zip(written, answered, strict=True):
        assert answer["status"] == "started"
        assert answer["data"] == {"progress": min(99, int(percent))}
