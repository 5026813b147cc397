"""Tasks that answer text instead of an image, through real CDN URLs: ``ascii`` (an HTML
page), ``detect_faces=export:true`` and ``metadata`` (JSON). Each is rendered in the job
processes from the image at its step of the chain, with the declared content type."""

from __future__ import annotations

import json

import pytest

from tests.api.harness import Harness
from tests.api.test_transform import get, stored
from tests.api.test_transform_effects import flat_png
from tests.api.test_transform_faces import astronaut

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


async def test_ascii_answers_an_html_page_of_the_image(harness: Harness) -> None:
    handle = await stored(harness, flat_png(200, 100, [0, 0, 0]), "a.png")
    resp = await harness.cdn.get(f"/resize=width:100/ascii=size:20/{handle}")
    assert resp.status == 200, await resp.text()
    assert resp.headers["Content-Type"].startswith("text/html")
    page = await resp.text()
    assert "<pre" in page.lower() and "<html" in page.lower()


async def test_detect_faces_exports_the_face_boxes_as_json(harness: Harness) -> None:
    handle = await astronaut(harness)
    resp = await harness.cdn.get(f"/detect_faces=export:true/{handle}")
    assert resp.status == 200, await resp.text()
    assert resp.headers["Content-Type"].startswith("application/json")
    boxes = json.loads(await resp.read())
    assert len(boxes) >= 1
    assert all(box["width"] > 20 and box["height"] > 20 for box in boxes)
    # Without export it is an image with the boxes drawn.
    _, body = await get(harness, f"/detect_faces/{handle}")
    assert body[:3] == b"\xff\xd8\xff"


async def test_metadata_task_answers_the_size_at_its_step(harness: Harness) -> None:
    handle = await stored(harness, flat_png(320, 240, [10, 20, 30]), "m.png")
    resp = await harness.cdn.get(f"/resize=width:160/metadata=p:[width,height]/{handle}")
    assert resp.status == 200, await resp.text()
    assert resp.headers["Content-Type"].startswith("application/json")
    assert json.loads(await resp.read()) == {"width": 160, "height": 120}
