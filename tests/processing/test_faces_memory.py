"""Face tasks read their image twice (the finder, then the drawing or the crop), so they
hold it in memory (``ops.in_memory``); the source, opened for random access, is decoded
whole by its loader already and is not copied again: a 24-megapixel JPEG (69 MiB
decoded) grew a job by 173-175 MiB with the copy, 108-110 without."""

from __future__ import annotations

from pathlib import Path

import pytest
import pyvips

from tests.processing import jobmemory


@pytest.fixture(scope="module")
def photo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("faces_memory") / "photo.jpg"
    noise = pyvips.Image.gaussnoise(600, 400, sigma=40, mean=128).resize(10)
    colour = noise.bandjoin([noise.flip("horizontal"), noise.flip("vertical")])
    colour.cast("uchar").jpegsave(str(path), Q=85)
    return path


@pytest.mark.parametrize("task", ["detect_faces", "redeye", "crop_faces=mode:fill"])
def test_a_face_task_holds_the_decoded_source_once(photo: Path, tmp_path: Path, task: str) -> None:
    # the finder's OpenCV loaded before: its own size is not the task's
    grown = jobmemory.render_grown_mib(photo, task, tmp_path / "o.jpg", preload="cv2")
    decoded = 6000 * 4000 * 3 / 2**20
    print(f"{task}: peak RSS grew {grown} MiB, {decoded:.0f} decoded")
    assert grown < 2 * decoded  # with a copy: 2.5 times
    made = pyvips.Image.new_from_file(str(tmp_path / "o.jpg"))
    assert (made.width, made.height) == (6000, 4000)  # no face: the photo as it is
