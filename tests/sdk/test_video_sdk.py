"""filestack-python's ``av_convert`` against a real ``stowage serve``: the SDK reads the
job's ``uuid`` and ``timestamp`` from the first answer, polls ``AudioVisual.status`` on
the same URL until ``completed``, and ``to_filelink()`` takes the result's handle from
``data.url``; filestack-js's ``client.transform(h, {video_convert: {...}})`` URL answers
the same job."""

from __future__ import annotations

import time
from pathlib import Path

import pyvips
import requests
from filestack import Client

from tests.api.test_video import clip
from tests.sdk.stack import Stack, run_js
from tests.sdk.test_python_sdk import pointed  # noqa: F401  (autouse: SDK pointed at us)


def test_av_convert_status_then_to_filelink(stack: Stack, tmp_path: Path) -> None:
    clip(tmp_path / "movie.mp4", seconds=2, size="160x120")
    link = Client(stack.open_key).upload(filepath=str(tmp_path / "movie.mp4"))
    converted = link.av_convert(preset="thumbnail", width=64, aspect_mode="preserve")
    assert converted.uuid and converted.timestamp
    deadline = time.monotonic() + 60
    while (state := converted.status) != "completed":
        assert state in ("pending", "started"), state
        assert time.monotonic() < deadline, "the conversion did not complete"
        time.sleep(0.2)
    result = converted.to_filelink()
    assert result.handle != link.handle
    image = pyvips.Image.new_from_buffer(result.get_content(), "")
    assert (image.width, image.height) == (64, 48)


def test_js_video_convert_url_answers_the_job(stack: Stack, tmp_path: Path) -> None:
    clip(tmp_path / "movie.mp4", seconds=2, size="160x120")
    link = Client(stack.open_key).upload(filepath=str(tmp_path / "movie.mp4"))
    options = {"video_convert": {"preset": "webm", "width": 80, "height": 60, "upscale": False}}
    out = run_js(stack, "transformUrl", source=link.handle, options=options)
    assert out["url"].startswith(f"{stack.cdn}/{stack.open_key}/video_convert=")
    first = requests.get(out["url"], timeout=10).json()
    assert first["status"] in ("pending", "started", "completed")
    deadline = time.monotonic() + 60
    while (found := requests.get(out["url"], timeout=10).json())["status"] != "completed":
        assert found["status"] in ("pending", "started"), found
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert found["uuid"] == first["uuid"]
    assert (found["metadata"]["result"]["width"], found["metadata"]["result"]["height"]) == (80, 60)
    assert found["metadata"]["result"]["video_codec"] == "vp8"
