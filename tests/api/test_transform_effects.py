"""The effect tasks through real CDN URLs, in the hosted service's documented forms: each
answer is decoded and its geometry and pixels checked where the effect must (and must
not) have changed them."""

from __future__ import annotations

import pytest
import pyvips

from stowage.processing import effects
from tests.api.harness import Harness
from tests.api.test_transform import decoded, get, picture, stored

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


def grey(image: pyvips.Image, x: int, y: int) -> float:
    return float(sum(image(x, y)[:3]) / 3)


def flat_png(width: int, height: int, value: list[int]) -> bytes:
    plane = (pyvips.Image.black(width, height, bands=len(value)) + value).cast("uchar")
    data: bytes = plane.copy(interpretation="srgb").write_to_buffer(".png")
    return data


async def test_vignette_keeps_the_size_and_darkens_the_corners(harness: Harness) -> None:
    handle = await stored(harness, flat_png(320, 240, [180, 180, 180]), "v.png")
    _, body = await get(harness, f"/vignette=amount:50,background:black/{handle}")
    image = decoded(body)
    assert (image.width, image.height) == (320, 240)
    assert image(160, 120)[:3] == [180, 180, 180]
    assert all(grey(image, x, y) < 120 for x, y in ((0, 0), (319, 0), (0, 239), (319, 239)))
    _, light = await get(harness, f"/vignette=amount:50/{handle}")  # white by default
    assert grey(decoded(light), 0, 0) > 200


async def test_transparent_background_keeps_alpha_in_a_png(harness: Harness) -> None:
    handle = await stored(harness, flat_png(120, 80, [90, 90, 90]), "t.png")
    chain = "vignette=amount:100,background:transparent"
    resp, body = await get(harness, f"/{chain}/output=format:png/{handle}")
    image = decoded(body)
    assert resp.headers["Content-Type"] == "image/png"
    assert image.bands == 4 and image(60, 40)[3] == 255 and image(0, 0)[3] < 40
    _, jpeg = await get(harness, f"/{chain}/output=format:jpg/{handle}")
    assert grey(decoded(jpeg), 0, 0) > 200  # a JPEG flattens onto white


async def test_shadow_grows_the_canvas_by_blur_and_vector(harness: Harness) -> None:
    handle = await stored(harness, flat_png(200, 100, [20, 40, 200]), "s.png")
    _, body = await get(harness, f"/shadow=blur:5,opacity:80,vector:[10,-6]/{handle}")
    image = decoded(body)
    x, y, width, height = effects.shadow_geometry(200, 100, 5, (10, -6))
    assert (image.width, image.height) == (width, height) == (200 + 10 + 10, 100 + 16 + 4)
    assert image(x + 100, y + 50)[:3] == [20, 40, 200]
    assert grey(image, x + 205, y + 50) < 150  # the shadow, right of the image
    assert image(0, height - 1)[:3] == [255, 255, 255]  # down-left: the white background


async def test_polaroid_frames_in_snow_and_rotates(harness: Harness) -> None:
    handle = await stored(harness, flat_png(300, 200, [0, 0, 0]), "p.png")
    _, body = await get(harness, f"/polaroid/{handle}")
    image = decoded(body)
    side, bottom = effects.polaroid_frame(300, 200)
    assert (image.width, image.height) == (300 + 2 * side, 200 + side + bottom)
    assert image(2, 2)[:3] == [255, 250, 250] and image(150, 100)[:3] == [0, 0, 0]
    _, body = await get(harness, f"/polaroid=rotate:90,color:red/{handle}")
    turned = decoded(body)
    assert (turned.width, turned.height) == (200 + side + bottom, 300 + 2 * side)


async def test_partial_pixelate_changes_only_the_boxes(harness: Harness) -> None:
    handle = await stored(harness, picture(400, 300, ".png"), "g.png")
    _, before = await get(harness, f"/output=format:png/{handle}")
    chain = "partial_pixelate=objects:[[20,30,100,80],[250,150,100,100]],amount:20,blur:0"
    _, body = await get(harness, f"/{chain}/{handle}")
    original, image = decoded(before), decoded(body)
    assert (image.width, image.height) == (400, 300)
    keep = (pyvips.Image.black(400, 300) + 255).draw_rect(0, 20, 30, 100, 80, fill=True)
    keep = keep.draw_rect(0, 250, 150, 100, 100, fill=True).cast("uchar")
    assert (((original - image).abs().bandor()) & keep).max() == 0
    block = image.extract_area(20, 30, 20, 20)
    assert (block - block(0, 0)).abs().max() == 0  # one block, one color


async def test_partial_blur_oval_and_short_lists(harness: Harness) -> None:
    handle = await stored(harness, picture(300, 200, ".png"), "b.png")
    _, body = await get(harness, f"/partial_blur=objects:[[50,50,100,100]],type:oval/{handle}")
    assert (decoded(body).width, decoded(body).height) == (300, 200)


async def test_upscale_doubles_width_and_height(harness: Harness) -> None:
    handle = await stored(harness, picture(320, 240), "u.jpg")
    _, body = await get(harness, f"/upscale=noise:low,style:artwork/{handle}")
    assert (decoded(body).width, decoded(body).height) == (640, 480)
    _, body = await get(harness, f"/upscale=upscale:false/{handle}")
    assert (decoded(body).width, decoded(body).height) == (320, 240)


@pytest.mark.parametrize(
    "chain",
    [
        "enhance",
        "enhance=preset:vivid",
        "enhance=preset:fix_tint",
        "oil_paint=amount:4",
        "torn_edges=spread:[3,20],background:black",
        "vignette=blurmode:linear",
    ],
)
async def test_size_keeping_effects(harness: Harness, chain: str) -> None:
    handle = await stored(harness, picture(320, 240), "e.jpg")
    resp, body = await get(harness, f"/{chain}/{handle}")
    image = decoded(body)
    assert (image.width, image.height) == (320, 240)
    assert resp.headers["Content-Type"] == "image/jpeg"


@pytest.mark.parametrize(
    ("chain", "option"),
    [
        ("vignette=amount:101", "vignette.amount"),
        ("vignette=blurmode:box", "vignette.blurmode"),
        ("shadow=vector:[1001,0]", "shadow.vector"),
        ("torn_edges=spread:[0,5]", "torn_edges.spread"),
        ("polaroid=rotate:360", "polaroid.rotate"),
        ("partial_pixelate=amount:10", "partial_pixelate.objects"),
        ("partial_blur=objects:[[0,0,0,5]]", "partial_blur.objects"),
        ("upscale=noise:extreme", "upscale.noise"),
        ("enhance=preset:magic", "enhance.preset"),
        ("oil_paint=amount:1", "oil_paint.amount"),
        ("ascii=size:5", "ascii.size"),
    ],
)
async def test_out_of_range_options_are_400(harness: Harness, chain: str, option: str) -> None:
    handle = await stored(harness)
    resp = await harness.cdn.get(f"/{chain}/{handle}")
    assert resp.status == 400, await resp.text()
    error = (await resp.json())["error"]
    assert error["code"] == "INVALID_PARAMETER"
    assert error["details"]["parameter"] == option
