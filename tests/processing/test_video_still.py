"""A thumbnail's size read from its header (``videoresults.still_size``), which replaced
the result's ffprobe: the JPEG and PNG files ffmpeg makes, at any size, and what is
neither."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import pyvips
from hypothesis import given, settings
from hypothesis import strategies as st

from stowage.processing.ffmpeg import MediaRefused
from stowage.processing.videoresults import still_size


@pytest.mark.parametrize(("codec", "extension"), [("mjpeg", "jpg"), ("png", "png")])
def test_the_size_of_what_ffmpeg_writes(tmp_path: Path, codec: str, extension: str) -> None:
    path = tmp_path / f"out.{extension}"
    source = ["-f", "lavfi", "-i", "testsrc=size=161x97:rate=1:duration=1"]
    argv = ["ffmpeg", "-v", "error", "-y", *source, "-frames:v", "1", "-c:v", codec]
    subprocess.run([*argv, "-update", "1", "-f", "image2", str(path)], check=True)
    assert still_size(path) == (161, 97)


@settings(max_examples=10, deadline=None)
@given(
    st.integers(1, 3000),
    st.integers(1, 3000),
    st.sampled_from([".jpg[Q=75]", ".jpg[Q=90,optimize_coding]", ".png"]),
)
def test_any_size_in_either_format(width: int, height: int, suffix: str) -> None:
    data = pyvips.Image.black(width, height).write_to_buffer(suffix)
    path = Path(f"/tmp/stowage-still-{width}-{height}")
    try:
        path.write_bytes(data)
        assert still_size(path) == (width, height)
    finally:
        path.unlink()


@pytest.mark.parametrize(
    "data", [b"", b"GIF89a\x01\x00\x01\x00", b"\xff\xd8\xff\xe0\x00\x10JFIF", b"\x89PNG\r\n"]
)
def test_neither_is_refused(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "out"
    path.write_bytes(data)
    with pytest.raises(MediaRefused):
        still_size(path)
