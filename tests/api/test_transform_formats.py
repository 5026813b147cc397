"""Format negotiation (auto_image) and the saved URL shapes of issue 23, through the CDN
origin: the answer's format follows Accept, says Vary: Accept, and each format is its
own derivative."""

from __future__ import annotations

import base64
import xml.etree.ElementTree as ElementTree

import pytest

from stowage.processing import grammar
from tests.api.harness import Harness
from tests.api.test_transform import decoded, get, picture, stored

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")
CHROME = "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8"
OLD_SAFARI = "image/webp,image/png,image/svg+xml,image/*;q=0.8,*/*;q=0.5"


@pytest.mark.parametrize(
    ("accept", "fmt"),
    [
        (CHROME, "avif"),
        (OLD_SAFARI, "webp"),
        ("image/avif;q=0, image/webp", "webp"),
        ("image/png,*/*", None),
        ("", None),
        ("image/AVIF", "avif"),
    ],
)
def test_the_accept_header_picks_the_format(accept: str, fmt: str | None) -> None:
    assert grammar.accepted_format(accept) == fmt


async def test_auto_image_follows_accept_and_says_vary(harness: Harness) -> None:
    handle = await stored(harness, picture(400, 300, ".png"), name="p.png")
    seen = {}
    for accept, mimetype, loader in [
        (CHROME, "image/avif", "heifload_buffer"),
        (OLD_SAFARI, "image/webp", "webpload_buffer"),
        ("image/png,*/*", "image/png", "pngload_buffer"),
    ]:
        resp, body = await get(
            harness, f"/auto_image/compress/{handle}", headers={"Accept": accept}
        )
        assert resp.headers["Content-Type"] == mimetype
        assert "Accept" in resp.headers["Vary"]
        image = decoded(body)
        assert image.get("vips-loader") == loader
        assert (image.width, image.height) == (400, 300)
        seen[mimetype] = resp.headers["ETag"]
    assert len(set(seen.values())) == 3  # three derivatives, not one shared
    resp, _ = await get(harness, f"/compress/{handle}")
    assert "Vary" not in resp.headers


async def test_the_hosted_shapes_answer_200(harness: Harness) -> None:
    handle = await stored(harness, picture(1200, 800))
    resp, body = await get(
        harness, f"/resize=w:640,h:386,f:crop,a:faces/output=q:60,f:pjpg/compress/{handle}"
    )
    image = decoded(body)
    assert (image.width, image.height, resp.headers["Content-Type"]) == (640, 386, "image/jpeg")
    assert b"\xff\xc2" in body  # progressive
    resp, body = await get(
        harness, f"/compress/output=format:webp/cache=expiry:max/resize=width:936/{handle}"
    )
    image = decoded(body)
    assert (image.width, image.height, resp.headers["Content-Type"]) == (936, 624, "image/webp")
    assert resp.headers["Cache-Control"] == "public, max-age=31536000"
    for task in ("sharpen=amount:0", "border=width:0", "blur=amount:0"):
        resp, body = await get(harness, f"/{task}/{handle}")
        assert (decoded(body).width, decoded(body).height) == (1200, 800)


@pytest.mark.parametrize(
    ("chain", "size"),
    [("output=format:svg", (64, 48)), ("resize=w:32/output=f:svg", (32, 24))],
)
async def test_svg_output_holds_the_result_as_a_png(
    harness: Harness, chain: str, size: tuple[int, int]
) -> None:
    """filestack-js's schema lets an SDK ask for svg: an SVG of the result's size holding
    it as a PNG (no tracing), with no script, served as an image."""
    handle = await stored(harness, picture(64, 48, ".png"), name="p.png")
    resp, body = await get(harness, f"/{chain}/{handle}")
    assert resp.headers["Content-Type"].startswith("image/svg+xml")
    root = ElementTree.fromstring(body)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert (int(root.get("width", 0)), int(root.get("height", 0))) == size
    (image,) = list(root)
    href = image.get("{http://www.w3.org/1999/xlink}href", "")
    assert href.startswith("data:image/png;base64,")
    inner = decoded(base64.b64decode(href.split(",", 1)[1]))
    assert (inner.width, inner.height) == size
    assert b"<script" not in body
