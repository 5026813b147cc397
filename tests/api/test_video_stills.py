"""Where a conversion's stills come from (processing/videothumbs.py): its own ffmpeg run
writes them, so a job runs ffmpeg once (twice for two passes) and no more, whether the
result is plain, scaled, two-pass or HLS; a watermarked conversion takes them from its
result in a run of their own, and the mark is in them."""

from __future__ import annotations

from asyncio.subprocess import Process
from pathlib import Path
from typing import Any

import pytest

from stowage.processing import ffmpeg
from tests.api.harness import Harness
from tests.api.test_video import clip, finished, stored, url
from tests.api.test_video_thumbs import NAMES, image
from tests.api.test_video_watermark import black_clip, is_black, is_red, mean, red_png


@pytest.fixture
def ffmpeg_runs(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The argv of every ffmpeg the jobs run (the real runs: only recorded)."""
    seen: list[list[str]] = []
    real = ffmpeg.spawn

    async def recording(argv: list[str], *args: Any, **kwargs: Any) -> Process:
        if argv[0] == "ffmpeg":
            seen.append(list(argv))
        return await real(argv, *args, **kwargs)

    monkeypatch.setattr(ffmpeg, "spawn", recording)
    return seen


@pytest.mark.parametrize(
    ("task", "runs", "size"),
    [
        ("video_convert=preset:h264", 1, (160, 120)),
        ("video_convert=preset:webm,width:80", 1, (80, 60)),
        ("video_convert=preset:h264,two_pass:true,video_bitrate:200,width:96", 2, (96, 72)),
        ("video_convert=preset:hls.variant,width:128,height:96", 1, (128, 96)),
        # The still is at the middle of a 1 s result, not at 1 s as the run held while
        # the input was probed had it (videorun.py): that run is dropped, another runs.
        ("video_convert=preset:h264,clip_offset:1,clip_length:1", 2, (160, 120)),
    ],
)
async def test_the_conversion_run_writes_the_stills(
    harness: Harness,
    tmp_path: Path,
    ffmpeg_runs: list[list[str]],
    task: str,
    runs: int,
    size: tuple[int, int],
) -> None:
    handle = await stored(harness, clip(tmp_path / "c.mp4"))
    done = await finished(harness, url(harness, task, handle))
    assert done["status"] == "completed", done
    assert len(ffmpeg_runs) == runs, ffmpeg_runs  # the passes, and no run for the stills
    # The first run was started while the input was probed, held on its stdin.
    assert "pipe:0" in ffmpeg_runs[0] and all("pipe:0" not in a for a in ffmpeg_runs[1:])
    written = [a for a in ffmpeg_runs[-1] if a.endswith(".jpg")]
    assert [Path(a).name for a in written] == [f"{n}.jpg" for n in NAMES]
    found = [await image(harness, done["data"][n]) for n in NAMES]
    fitted = [
        (min(box, size[0]), round(min(box, size[0]) * size[1] / size[0])) for box in (100, 200)
    ]
    assert [(i.width, i.height) for i in found] == [size, *fitted]


async def test_a_watermarked_conversion_takes_its_stills_from_the_result(
    harness: Harness, tmp_path: Path, ffmpeg_runs: list[list[str]]
) -> None:
    handle = await stored(harness, black_clip(tmp_path / "b.mp4"))
    mark = await stored(harness, red_png(), "mark.png")
    task = f"video_convert=preset:h264,watermark_url:{mark},watermark_left:0,watermark_top:0"
    task += ",watermark_width:40,watermark_height:30,thumbnail_offset:0"
    done = await finished(harness, url(harness, task, handle))
    assert done["status"] == "completed", done
    assert len(ffmpeg_runs) == 2, ffmpeg_runs  # the conversion, then the stills
    assert any(a.endswith("/output.mp4") for a in ffmpeg_runs[1][: ffmpeg_runs[1].index("-i") + 2])
    thumb = await image(harness, done["data"]["thumb"])
    assert is_red(mean(thumb, 4, 4, 30, 20)) and is_black(mean(thumb, 100, 70, 40, 30))
