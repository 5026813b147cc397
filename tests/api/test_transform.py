"""Transformation URLs on the CDN and the process address, against the real apps: every
answer is decoded with pyvips and its geometry and format checked."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest
import pyvips

from stowage.registry.base import App
from tests.api.balanced import NODES, through_nginx
from tests.api.harness import Harness

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


def picture(width: int = 640, height: int = 480, fmt: str = ".jpg", **options: Any) -> bytes:
    """A test image: a gradient, so that crops and flips can be told apart."""
    xy = pyvips.Image.xyz(width, height)
    image = (xy[0] * 255 / width).bandjoin([xy[1] * 255 / height, 128]).cast("uchar")
    data: bytes = image.write_to_buffer(fmt, **options)
    return data


def decoded(body: bytes) -> pyvips.Image:
    return pyvips.Image.new_from_buffer(body, "")


async def stored(
    harness: Harness, data: bytes | None = None, name: str = "p.jpg", app: App | None = None
) -> str:
    result = await harness.store(data if data is not None else picture(), app, filename=name)
    return str(result["handle"])


async def get(harness: Harness, path: str, status: int = 200, **kw: Any) -> Any:
    resp = await harness.cdn.get(path, **kw)
    body = await resp.read()
    assert resp.status == status, body[:500]
    return resp, body


async def test_resize_keeps_the_aspect_and_the_format(harness: Harness) -> None:
    handle = await stored(harness)
    resp, body = await get(harness, f"/resize=width:300/{handle}")
    image = decoded(body)
    assert (image.width, image.height) == (300, 225)
    assert image.get("vips-loader") == "jpegload_buffer"
    assert resp.headers["Content-Type"] == "image/jpeg"
    assert resp.headers["xkey"] == handle
    assert resp.headers["X-Content-Type-Options"] == "nosniff"
    assert "sandbox" in resp.headers["Content-Security-Policy"]
    assert resp.headers["ETag"]


@pytest.mark.parametrize(
    ("chain", "size", "fmt"),
    [
        ("resize=width:100,height:100,fit:crop", (100, 100), "jpeg"),
        ("resize=width:100,height:100,fit:clip", (100, 75), "jpeg"),
        ("resize=width:100,height:100,fit:scale", (100, 100), "jpeg"),
        ("resize=width:2000,fit:max", (640, 480), "jpeg"),
        ("resize=height:48", (64, 48), "jpeg"),
        ("crop=dim:[10,20,100,50]", (100, 50), "jpeg"),
        ("rotate=deg:90", (480, 640), "jpeg"),
        ("rotate=deg:exif", (640, 480), "jpeg"),
        ("flip/flop", (640, 480), "jpeg"),
        ("output=format:png", (640, 480), "png"),
        ("output=format:webp,quality:40", (640, 480), "webp"),
        ("output=format:avif", (640, 480), "heif"),
        ("output=format:gif", (640, 480), "gif"),
        ("output=format:tiff,compress:true", (640, 480), "tiff"),
        ("quality=value:10", (640, 480), "jpeg"),
        ("compress", (640, 480), "jpeg"),
        ("no_metadata", (640, 480), "jpeg"),
        ("blur=amount:4", (640, 480), "jpeg"),
        ("sharpen=amount:3", (640, 480), "jpeg"),
        ("monochrome", (640, 480), "jpeg"),
        ("blackwhite=threshold:40", (640, 480), "jpeg"),
        ("sepia=tone:60", (640, 480), "jpeg"),
        ("negative", (640, 480), "jpeg"),
        ("modulate=brightness:120,hue:30,saturation:80", (640, 480), "jpeg"),
        ("pixelate=amount:8", (640, 480), "jpeg"),
        ("circle/output=format:png", (640, 480), "png"),
        ("rounded_corners=radius:20/output=format:png", (640, 480), "png"),
        ("border=width:5,color:FF0000", (650, 490), "jpeg"),
        ("resize=width:200/rotate=deg:90/output=format:webp", (150, 200), "webp"),
    ],
)
async def test_each_task(harness: Harness, chain: str, size: tuple[int, int], fmt: str) -> None:
    handle = await stored(harness)
    _, body = await get(harness, f"/{chain}/{handle}")
    image = decoded(body)
    assert (image.width, image.height) == size
    assert image.get("vips-loader").startswith(fmt)


async def test_effects_change_the_pixels(harness: Harness) -> None:
    handle = await stored(harness, picture(fmt=".png"), "p.png")
    _, plain = await get(harness, f"/output=format:png/{handle}")
    _, negative = await get(harness, f"/negative/output=format:png/{handle}")
    _, flipped = await get(harness, f"/flip/output=format:png/{handle}")
    _, circled = await get(harness, f"/circle/output=format:png/{handle}")
    plain_img, neg_img = decoded(plain), decoded(negative)
    assert plain_img(5, 5)[0] + neg_img(5, 5)[0] == pytest.approx(255, abs=2)
    assert decoded(flipped)(5, 5)[1] == pytest.approx(plain_img(5, 474)[1], abs=2)
    corner = decoded(circled)
    assert corner.bands == 4 and corner(0, 0)[3] == 0 and corner(320, 240)[3] == 255


async def test_imagesize_answers_json(harness: Harness) -> None:
    handle = await stored(harness)
    resp, _ = await get(harness, f"/imagesize/{handle}")
    assert await resp.json() == {"width": 640, "height": 480}
    resp, _ = await get(harness, f"/resize=width:64/imagesize/{handle}")
    assert await resp.json() == {"width": 64, "height": 48}


async def test_option_order_is_one_cache_entry(harness: Harness) -> None:
    handle = await stored(harness)
    first, a = await get(harness, f"/resize=width:30,height:20,fit:crop/{handle}")
    second, b = await get(harness, f"/resize=fit:crop,height:20,width:30/{handle}")
    assert a == b
    assert first.headers["ETag"] == second.headers["ETag"]
    folder = harness.settings.data_dir / "derivatives" / "objects"
    if folder.exists():  # one node: the derivative store is local disk
        assert len([p for p in folder.rglob("*") if p.is_file()]) == 1


async def test_range_head_and_if_none_match(harness: Harness) -> None:
    handle = await stored(harness)
    resp, body = await get(harness, f"/resize=width:120/{handle}")
    etag = resp.headers["ETag"]
    head = await harness.cdn.head(f"/resize=width:120/{handle}")
    assert head.status == 200 and int(head.headers["Content-Length"]) == len(body)
    part = await harness.cdn.get(f"/resize=width:120/{handle}", headers={"Range": "bytes=0-9"})
    assert part.status == 206 and await part.read() == body[:10]
    again = await harness.cdn.get(f"/resize=width:120/{handle}", headers={"If-None-Match": etag})
    assert again.status == 304


async def test_cache_task_sets_the_headers(harness: Harness) -> None:
    handle = await stored(harness)
    resp, _ = await get(harness, f"/cache=false/resize=width:50/{handle}")
    assert resp.headers["Cache-Control"] == "no-store"
    resp, _ = await get(harness, f"/cache=expiry:60/resize=width:50/{handle}")
    assert resp.headers["Cache-Control"] == "public, max-age=60"
    for quoted in ('"60"', "%2260%22"):  # a quoted number is the number
        resp, _ = await get(harness, f"/cache=expiry:{quoted}/resize=width:50/{handle}")
        assert resp.headers["Cache-Control"] == "public, max-age=60"
        resp, _ = await get(harness, f"/cache=expiry:{quoted}/{handle}")  # the original too
        assert resp.headers["Cache-Control"] == "public, max-age=60"


async def test_cache_query_flag_reads_like_a_download(harness: Harness) -> None:
    """``?cache=`` is parsed by the one boolean parser, as on a plain download."""
    handle = await stored(harness)
    for word in ("false", "OFF", " 0 "):
        resp = await harness.cdn.get(f"/resize=width:50/{handle}", params={"cache": word})
        assert resp.status == 200 and resp.headers["Cache-Control"] == "no-store", word
    bad = await harness.cdn.get(f"/resize=width:50/{handle}", params={"cache": "maybe"})
    plain = await harness.cdn.get(f"/{handle}", params={"cache": "maybe"})
    assert bad.status == plain.status == 400


async def test_js_form_with_api_key(harness: Harness) -> None:
    handle = await stored(harness)
    key = harness.open_app.api_key
    _, body = await get(harness, f"/{key}/resize=width:32/output=format:png/{handle}")
    assert decoded(body).width == 32


async def test_unknown_task_lists_the_supported_ones(harness: Harness) -> None:
    handle = await stored(harness)
    resp = await harness.cdn.get(f"/no_such_task=amount:3/{handle}")
    assert resp.status == 400
    error = (await resp.json())["error"]
    assert error["code"] == "UNSUPPORTED_TASK"
    assert {"resize", "oil_paint", "vignette"} <= set(error["details"]["supported"])
    assert "resize" in error["message"]


@pytest.mark.parametrize(
    ("chain", "option"),
    [
        ("resize=width:0", "resize.width"),
        ("resize=width:abc", "resize.width"),
        ("resize=width:100,fit:sideways", "resize.fit"),
        ("resize=colour:red,width:10", "resize.colour"),
        ("resize", "resize.width"),
        ("crop=dim:[1,2,3]", "crop.dim"),
        ("rotate=deg:720", "rotate.deg"),
        ("output=format:bmp", "output.format"),
        ("quality=value:101", "quality.value"),
        ("blur=amount:1e9", "blur.amount"),
        ("border=color:notacolor", "border.color"),
        ("resize=width:99999999999999999999", "resize.width"),
    ],
)
async def test_bad_options_name_the_option(harness: Harness, chain: str, option: str) -> None:
    handle = await stored(harness)
    resp = await harness.cdn.get(f"/{chain}/{handle}")
    assert resp.status == 400, await resp.text()
    error = (await resp.json())["error"]
    assert error["code"] == "INVALID_PARAMETER"
    assert error["details"]["parameter"] == option


async def test_non_images_are_refused_with_415(harness: Harness) -> None:
    handle = await stored(harness, b"just some text, not an image\n", "a.bin")
    resp = await harness.cdn.get(f"/resize=width:10/{handle}")
    assert resp.status == 415
    assert (await resp.json())["error"]["code"] == "NOT_AN_IMAGE"


async def test_truncated_images_are_refused_with_422(harness: Harness) -> None:
    data = picture()
    handle = await stored(harness, data[: len(data) // 2])
    resp = await harness.cdn.get(f"/blur/{handle}")
    assert resp.status == 422
    assert (await resp.json())["error"]["code"] == "INVALID_IMAGE"


@pytest.mark.parametrize("suffix", [".tif", ".png", ".webp"])
async def test_a_damaged_image_is_422_to_every_task(harness: Harness, suffix: str) -> None:
    """Cut at seeded points (seed 5379), or its signature alone: a TIFF cut before its
    directory (libtiff writes it after the pixels) was 415 NOT_AN_IMAGE, a file of no
    image format, while a JPEG cut short is 422."""
    rng = random.Random(5379)
    data = bytes(pyvips.Image.xyz(120, 90)[0].cast("uchar").write_to_buffer(suffix))
    cuts = [data[: rng.randrange(len(data) // 10, len(data) * 9 // 10)] for _ in range(2)]
    for cut in [*cuts, data[:12]]:
        handle = await stored(harness, cut, "cut" + suffix)
        for task in ("flip", "imagesize", "resize=width:10"):
            resp = await harness.cdn.get(f"/{task}/{handle}")
            body = await resp.json()
            if task == "imagesize" and resp.status == 200:  # a PNG's or WebP's header whole
                assert suffix != ".tif" and body == {"width": 120, "height": 90}, body
                continue
            assert (resp.status, body["error"]["code"]) == (422, "INVALID_IMAGE"), (task, body)


async def test_unknown_handle_is_404(harness: Harness) -> None:
    resp = await harness.cdn.get("/resize=width:10/AAAAAAAAAAAAAAAAAAAA")
    assert resp.status == 404


async def test_concurrent_first_requests_compute_once(harness: Harness) -> None:
    from stowage.processing import metrics

    handle = await stored(harness)
    before = metrics.JOBS.value(outcome="ok")
    bodies = await asyncio.gather(*(get(harness, f"/resize=width:77/{handle}") for _ in range(8)))
    assert len({body for _, body in bodies}) == 1
    jobs = metrics.JOBS.value(outcome="ok") - before
    assert 1 <= jobs <= (NODES if through_nginx() else 1)  # once per node at most


@pytest.mark.parametrize(
    ("suffix", "mimetype", "loader"),
    [
        (".png", "image/png", "png"),
        (".webp", "image/webp", "webp"),
        (".gif", "image/gif", "gif"),
        (".tif", "image/tiff", "tiff"),
        (".avif", "image/avif", "heif"),
    ],
)
async def test_every_input_format(
    harness: Harness, suffix: str, mimetype: str, loader: str
) -> None:
    handle = await stored(harness, picture(200, 100, suffix), f"in{suffix}")
    resp, body = await get(harness, f"/resize=width:50/{handle}")
    image = decoded(body)
    assert (image.width, image.height) == (50, 25)
    assert resp.headers["Content-Type"] == mimetype  # the input's format by default
    assert image.get("vips-loader").startswith(loader)
