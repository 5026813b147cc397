"""``ocr`` on the CDN with the real Tesseract (issue 26): the hosted service's JSON,
after image tasks, cached as a derivative and renewed when the file is overwritten."""

from __future__ import annotations

import pytest
import pyvips

from tests.api.harness import Harness
from tests.api.test_transform import get, stored
from tests.api.test_transform_rules import derivative_files, overwrite

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.needs("tesseract", by="scripts/setup.d/78-tesseract.sh"),
]


def page(*lines: str, fmt: str = ".png") -> bytes:
    text = pyvips.Image.text("\n".join(lines), dpi=300, font="sans")
    white = (255 - text).embed(40, 40, text.width + 80, text.height + 80, extend="white")
    data: bytes = white.colourspace("srgb").cast("uchar").write_to_buffer(fmt)
    return data


async def test_ocr_answers_the_words_as_json(harness: Harness) -> None:
    handle = await stored(harness, page("HELLO FROM STOWAGE", "SECOND LINE"), "t.png")
    resp, _ = await get(harness, f"/ocr/{handle}")
    assert resp.headers["Content-Type"].startswith("application/json")
    found = await resp.json()
    assert found["text"] == "HELLO FROM STOWAGE\nSECOND LINE"
    line = found["document"]["text_areas"][0]["lines"][0]
    assert [w["text"] for w in line["words"]] == ["HELLO", "FROM", "STOWAGE"]
    assert len(line["bounding_box"]) == 4 and set(line["bounding_box"][0]) == {"x", "y"}


async def test_ocr_reads_the_image_the_tasks_before_it_made(harness: Harness) -> None:
    handle = await stored(harness, page("UPSIDE DOWN", fmt=".jpg"), "t.jpg")
    resp, _ = await get(harness, f"/rotate=deg:180/flop/flip/ocr/{handle}")
    assert (await resp.json())["text"] == "UPSIDE DOWN"
    resp, _ = await get(harness, f"/resize=width:300/ocr/{handle}")
    boxes = [a["bounding_box"] for a in (await resp.json())["document"]["text_areas"]]
    assert all(corner["x"] <= 300 for box in boxes for corner in box)


async def test_ocr_must_be_last(harness: Harness) -> None:
    handle = await stored(harness, page("LAST"), "t.png")
    resp = await harness.cdn.get(f"/ocr/resize=width:10/{handle}")
    assert resp.status == 400


async def test_the_answer_is_a_derivative_renewed_on_overwrite(harness: Harness) -> None:
    handle = await stored(harness, page("FIRST VERSION"), "t.png")
    resp, _ = await get(harness, f"/ocr/{handle}")
    assert (await resp.json())["text"] == "FIRST VERSION"
    assert len(await derivative_files(harness)) == 1
    await overwrite(harness, handle, page("SECOND EDITION"))
    resp, _ = await get(harness, f"/ocr/{handle}")
    assert (await resp.json())["text"] == "SECOND EDITION"
