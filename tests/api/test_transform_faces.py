"""Face tasks through CDN URLs, rendered in the job processes (OpenCV imported there,
under their address-space limit), on scikit-image's astronaut photo."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest
import pyvips

from stowage.processing import faces
from tests.api.harness import Harness
from tests.api.test_transform import decoded, get, stored

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")
ASTRONAUT = Path(str(resources.files("skimage") / "data" / "astronaut.png"))


async def astronaut(harness: Harness) -> str:
    data = pyvips.Image.new_from_file(str(ASTRONAUT)).jpegsave_buffer(Q=92)
    return await stored(harness, data, name="astronaut.jpg")


async def test_crop_faces_thumb_is_100x100_around_the_face(harness: Harness) -> None:
    handle = await astronaut(harness)
    _, body = await get(harness, f"/crop_faces=mode:thumb,width:100,height:100/{handle}")
    image = decoded(body)
    assert (image.width, image.height) == (100, 100)
    found = faces.detect(image.resize(3))
    assert len(found) == 1 and found[0].x >= 0 and found[0].right <= 300


@pytest.mark.parametrize(
    ("chain", "size"),
    [
        ("resize=w:640,h:386,f:crop,a:faces/output=q:60,f:jpg", (640, 386)),
        ("smart_crop=width:200,height:200", (200, 200)),
        ("smart_crop=w:300,h:120,m:face", (300, 120)),
        ("crop_faces=m:fill,w:80,h:120,b:50", (80, 120)),
        ("pixelate_faces=t:oval/blur_faces=a:5", (512, 512)),
        ("redeye/detect_faces=c:red", (512, 512)),
    ],
)
async def test_face_tasks_in_urls(harness: Harness, chain: str, size: tuple[int, int]) -> None:
    handle = await astronaut(harness)
    _, body = await get(harness, f"/{chain}/{handle}")
    image = decoded(body)
    assert (image.width, image.height) == size


async def test_pixelate_faces_changes_the_face_and_not_the_corner(harness: Harness) -> None:
    handle = await astronaut(harness)
    _, plain = await get(harness, f"/output=format:png/{handle}")
    _, covered = await get(harness, f"/pixelate_faces=amount:20/output=format:png/{handle}")
    before, after = decoded(plain), decoded(covered)
    box = faces.detect(before)[0]
    area = (box.x, box.y, box.width, box.height)
    diff = (before.extract_area(*area).cast("float") - after.extract_area(*area)).abs()
    assert diff.avg() > 8
    corner = before.extract_area(0, 0, 100, 100).cast("float") - after.extract_area(0, 0, 100, 100)
    assert corner.abs().max() == 0


@pytest.mark.parametrize(
    ("chain", "parameter"),
    [
        ("crop_faces=mode:zoom", "crop_faces.mode"),
        ("pixelate_faces=amount:1", "pixelate_faces.amount"),
        ("blur_faces=faces:0", "blur_faces.faces"),
        ("smart_crop=width:10001", "smart_crop.width"),
        ("detect_faces=minsize:-1", "detect_faces.minsize"),
    ],
)
async def test_bad_face_parameters_are_a_400_naming_them(
    harness: Harness, chain: str, parameter: str
) -> None:
    handle = await astronaut(harness)
    resp, body = await get(harness, f"/{chain}/{handle}", status=400)
    assert resp.headers["Content-Type"].startswith("application/json")
    assert parameter.encode() in body
