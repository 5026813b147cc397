"""The video benchmark (bench/video.py, issue 27): the command it compares a job with is
the job's own plan (same options, same priority), and the clips it makes are what its
rows say."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench import video as bench_video  # noqa: E402
from stowage.processing import grammar, video  # noqa: E402


def test_the_reference_command_is_the_jobs_plan(tmp_path: Path) -> None:
    for task in (bench_video.THUMBNAIL, *(f"video_convert=preset:{p}" for p in ("h264", "webm"))):
        argv = bench_video.ffmpeg_argv(task, Path("in.mp4"), Path("out.x"))
        plan = video.plan(grammar.parse_task(task))
        assert argv[:3] == ["nice", "-n", "10"]  # as the job's ffmpeg runs
        assert argv[-len(plan.options) - 1 : -1] == list(plan.options)


def test_the_clip_and_the_thumbnail_command(tmp_path: Path) -> None:
    clip = bench_video.make_clip(tmp_path / "c.mp4", "320x180", 6, rate=5)
    probed = json.loads(
        subprocess.run(
            ["ffprobe", "-v", "error", "-show_streams", "-show_format", "-of", "json", str(clip)],
            check=True,
            capture_output=True,
        ).stdout
    )
    kinds = {s["codec_type"]: s for s in probed["streams"]}
    assert (kinds["video"]["codec_name"], kinds["video"]["width"]) == ("h264", 320)
    assert abs(float(probed["format"]["duration"]) - 6.0) < 0.2
    seconds = bench_video.run_ffmpeg(bench_video.THUMBNAIL, clip, tmp_path, 2, 2)
    assert seconds > 0 and (tmp_path / "r0.jpg").stat().st_size > 0
    assert (tmp_path / "r1.jpg").stat().st_size > 0
