"""Tasks that answer text instead of an image, through real CDN URLs: ``ascii`` (an HTML
page), ``detect_faces=export:true`` and ``metadata`` (JSON). Each is rendered in the job
processes from the image at its step of the chain, with the declared content type."""

from __future__ import annotations

import json
from fractions import Fraction

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


@pytest.mark.parametrize("seed", [*range(4), 9899])
async def test_metadata_task_answers_the_files_own_fields(harness: Harness, seed: int) -> None:
    """``metadata=params:[size,md5,filename]`` answered ``{}``: the fields of the file
    came from nowhere. Random field lists (and none) through every URL form, each field
    as ``/<HANDLE>/metadata`` gives it, the image's own at the task's step, in the order
    asked (9899: ``p:[height,width]`` was answered width first)."""
    import random

    from stowage.processing.subjects import METADATA_FIELDS

    rng = random.Random(seed)
    width, height = rng.randrange(20, 200), rng.randrange(20, 200)
    handle = await stored(harness, flat_png(width, height, [9, 80, 200]), f"f{seed}.png")
    for _ in range(3):
        names = rng.sample([n for n in METADATA_FIELDS if n != "exif"], rng.randrange(0, 6))
        task = f"metadata=p:[{','.join(names)}]" if names else "metadata"
        side = rng.randrange(5, 20)
        prefix = rng.choice(["", "/process", f"/{harness.open_app.api_key}"])
        client = harness.api if prefix == "/process" else harness.cdn
        resp = await client.get(f"{prefix}/resize=width:{side}/{task}/{handle}")
        answer = json.loads(await resp.read())
        assert resp.status == 200, answer
        own = [n for n in names if n not in ("width", "height")]
        expected = {}
        if own or not names:
            params = {n: "true" for n in own}
            meta = await harness.api.get(f"/api/file/{handle}/metadata", params=params)
            expected = await meta.json()
        half_up = int(Fraction(height * side, width) + Fraction(1, 2))  # as every side is
        shown = {"width": side, "height": max(1, half_up)}
        expected.update({n: shown[n] for n in ("width", "height") if n in names or not names})
        assert answer == expected, (task, prefix)
        assert list(answer) == (names or list(answer)), task  # in the order asked
