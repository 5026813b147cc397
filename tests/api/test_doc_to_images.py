"""``doc_to_images`` (issue 26): the answer lists each page's image URL, which renders that
page; URLs as filestack-python builds them; pages, format, density and the refusals."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest
from filestack import Filelink

from tests.api.harness import Harness
from tests.api.test_transform import decoded, stored
from tests.api.test_transform_rules import code_of
from tests.processing import pdfs

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")
BOXES = [(612, 792), (300, 200), (400, 400)]  # pdfs.three_pages()
COLOURS = [pdfs.RED, pdfs.GREEN, pdfs.BLUE]


def near_colour(image: Any, colour: tuple[float, float, float], tolerance: int = 3) -> bool:
    """The page's centre is the colour its content fills it with."""
    found = image.getpoint(image.width // 2, image.height // 2)[:3]
    return all(abs(f - w * 255) <= tolerance for f, w in zip(found, colour, strict=True))


async def answer_of(harness: Harness, path: str) -> dict[str, Any]:
    resp = await harness.cdn.get(path)
    assert resp.status == 200, await resp.text()
    assert resp.headers["Content-Type"].startswith("application/json")
    found: dict[str, Any] = await resp.json()
    return found


async def image_at(harness: Harness, url: str) -> tuple[str, Any]:
    parts = urlsplit(url)
    assert f"{parts.scheme}://{parts.netloc}" == harness.settings.cdn_url()
    resp = await harness.cdn.get(parts.path + (f"?{parts.query}" if parts.query else ""))
    body = await resp.read()
    assert resp.status == 200, body[:300]
    return resp.headers["Content-Type"], decoded(body)


async def test_every_page_by_default_each_url_that_page(harness: Harness) -> None:
    handle = await stored(harness, pdfs.three_pages(), "three.pdf")
    found = await answer_of(harness, f"/doc_to_images/{handle}")
    assert (found["pages"], found["format"], found["density"]) == (3, "png", 72)
    assert [i["page"] for i in found["images"]] == [1, 2, 3]
    for image, box, colour in zip(found["images"], BOXES, COLOURS, strict=True):
        assert (image["width"], image["height"]) == box
        kind, decoded_image = await image_at(harness, image["url"])
        assert kind == "image/png"
        assert (decoded_image.width, decoded_image.height) == box
        assert near_colour(decoded_image, colour)


async def test_the_sdks_url_with_pages_format_quality_and_density(harness: Harness) -> None:
    handle = await stored(harness, pdfs.three_pages(), "three.pdf")
    built = Filelink(handle).doc_to_images(pages=[3, 2], format="jpg", quality=80, density=144)
    path = urlsplit(built.url).path  # the SDK's own CDN host: only its path is sent here
    assert path.startswith("/doc_to_images=")
    found = await answer_of(harness, path)
    assert [i["page"] for i in found["images"]] == [3, 2] and found["format"] == "jpg"
    for image, number in zip(found["images"], (3, 2), strict=True):
        width, height = BOXES[number - 1]
        assert (image["width"], image["height"]) == (width * 2, height * 2)
        assert "quality:80" in image["url"]
        kind, page = await image_at(harness, image["url"])
        assert kind == "image/jpeg" and (page.width, page.height) == (width * 2, height * 2)
        assert near_colour(page, COLOURS[number - 1], tolerance=12)


@pytest.mark.parametrize(
    ("path", "status", "code"),
    [
        ("/doc_to_images=pages:[4]/{h}", 400, "INVALID_PARAMETER"),
        ('/doc_to_images=pages:["2-9"]/{h}', 400, "INVALID_PARAMETER"),
        ("/doc_to_images=format:gif/{h}", 400, "INVALID_PARAMETER"),
        ("/doc_to_images=density:0/{h}", 400, "INVALID_PARAMETER"),
        ("/resize=width:10/doc_to_images/{h}", 400, "INVALID_PARAMETER"),
        ("/doc_to_images/store/{h}", 400, "INVALID_PARAMETER"),
        ("/doc_to_images/{img}", 415, "NOT_A_PDF"),
    ],
)
async def test_refusals(harness: Harness, path: str, status: int, code: str) -> None:
    handle = await stored(harness, pdfs.three_pages(), "three.pdf")
    image = await stored(harness)
    resp = await harness.cdn.get(path.format(h=handle, img=image))
    assert resp.status == status, await resp.text()
    assert await code_of(resp) == code


async def test_an_image_is_refused_in_the_name_of_the_task_asked(harness: Harness) -> None:
    """doc_to_images reads the document's pdfinfo: the refusal names the task asked."""
    resp = await harness.cdn.get(f"/doc_to_images/{await stored(harness)}")
    assert resp.status == 415
    assert (await resp.json())["error"]["message"] == "doc_to_images takes a document"


async def test_a_secured_apps_urls_carry_the_requests_policy(harness: Harness) -> None:
    app = harness.secure_app
    handle = await stored(harness, pdfs.three_pages(), "three.pdf", app=app)
    assert (await harness.cdn.get(f"/doc_to_images/{handle}")).status in (401, 403)
    creds = harness.policy(app, call=["convert"], handle=handle)
    found = await answer_of(
        harness, f"/security=p:{creds['policy']},s:{creds['signature']}/doc_to_images/{handle}"
    )
    url = found["images"][1]["url"]
    assert f"signature={creds['signature']}" in url
    kind, page = await image_at(harness, url)
    assert kind == "image/png" and (page.width, page.height) == BOXES[1]


@pytest.mark.settings(processing_max_output_dimension=800)
@pytest.mark.parametrize("density", [72, 100, 117, 150, 300])
async def test_a_page_past_the_size_limit_is_refused_not_listed(
    harness: Harness, density: int
) -> None:
    """A page whose image would be past the output limit was listed with a URL that
    then answered 422: the listing itself now says so, naming the page."""
    handle = await stored(harness, pdfs.three_pages(), "three.pdf")
    sides = [max(w, h) * density / 72 for w, h in BOXES]
    resp = await harness.cdn.get(f"/doc_to_images=density:{density}/{handle}")
    if all(side <= 800 for side in sides):
        assert resp.status == 200, await resp.text()
        for image in (await resp.json())["images"]:
            await image_at(harness, image["url"])  # each URL listed renders
        return
    assert resp.status == 422 and await code_of(resp) == "IMAGE_TOO_LARGE"
    first = next(n for n, side in enumerate(sides, 1) if round(side) > 800)
    assert f"page {first}" in (await resp.json())["error"]["message"]
