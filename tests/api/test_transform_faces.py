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


def _moving_animation(face: pyvips.Image, frames: int = 4) -> bytes:
    """The astronaut, small, on a grey canvas: at the left on even frames, at the right
    on odd ones, with a dot that moves across (each frame its own content)."""
    face = face.resize(240 / face.width).extract_band(0, n=3)
    made = []
    for index in range(frames):
        canvas = pyvips.Image.black(600, 260, bands=3).new_from_image([128, 128, 128])
        canvas = canvas.insert(face, 10 if index % 2 == 0 else 350, 10)
        made.append(canvas.draw_rect([255, 0, 0], 60 * index, 252, 8, 8, fill=True))
    strip = pyvips.Image.arrayjoin(made, across=1).cast("uchar").copy(interpretation="srgb")
    strip.set_type(pyvips.GValue.gint_type, "page-height", 260)
    strip.set_type(pyvips.GValue.array_int_type, "delay", [100, 200, 300, 400][:frames])
    data: bytes = strip.gifsave_buffer()
    return data


@pytest.mark.parametrize(
    ("tasks", "size"),
    [
        ("crop_faces", None),
        ("crop_faces=width:80,height:80", (80, 80)),
        ("smart_crop=width:100,height:100", (100, 100)),
        ("resize=width:100,height:100,fit:crop,align:faces", (100, 100)),
    ],
)
async def test_an_animation_is_cut_to_its_first_frames_window(
    harness: Harness, tasks: str, size: tuple[int, int] | None
) -> None:
    """Each frame cut to its own faces made frames of different sizes, joined into one
    tall still (crop_faces), or a window that jumped from frame to frame (smart_crop):
    every frame is now cut where the first frame was, and the animation keeps its frames
    and delays."""
    handle = await stored(
        harness, _moving_animation(pyvips.Image.new_from_file(str(ASTRONAUT))), name="a.gif"
    )
    resp = await harness.cdn.get(f"/{tasks}/{handle}")
    assert resp.status == 200, await resp.text()
    made = pyvips.Image.new_from_buffer(await resp.read(), "", n=-1)
    assert made.get("n-pages") == 4 and made.get("delay") == [100, 200, 300, 400]
    height = made.get("page-height")
    if size is not None:
        assert (made.width, height) == size
    else:  # around the face: smaller than the canvas
        assert made.width < 600 and height <= 260
    first = made.extract_area(0, 0, made.width, height)
    third = made.extract_area(0, 2 * height, made.width, height)  # the face where frame 1's is
    assert (first - third).abs().avg() < 12, tasks  # the same window: only the dot moved
