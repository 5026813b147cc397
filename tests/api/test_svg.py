"""SVG sources on the CDN (issue 26): drawn by libvips (librsvg) after the check and
rewrite of ``processing/svg.py``; a hostile SVG is a JSON 422 and a listener it points
at sees no connection."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator

import pytest
import pyvips

from tests.api.harness import Harness
from tests.api.test_transform import decoded, get, stored
from tests.api.test_transform_rules import code_of

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")

HEAD = '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"'
PICTURE = (
    '<?xml version="1.0"?>\n'
    '<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" '
    '"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">\n'
    + HEAD
    + ' width="400" height="200"><rect width="200" height="200" fill="#f00"/>'
    '<rect x="200" width="200" height="200" fill="#00f"/>'
    '<script>document.title = "x"</script></svg>'
)


@pytest.fixture
async def listener() -> AsyncIterator[tuple[int, list[str]]]:
    """A server on 127.0.0.1 that records every connection made to it."""
    seen: list[str] = []

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(str(writer.get_extra_info("peername")))
        writer.close()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield port, seen
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize(
    ("chain", "size", "mimetype"),
    [
        ("resize=width:100", (100, 50), "image/png"),
        ("resize=height:50/output=format:jpg", (100, 50), "image/jpeg"),
        ("output=format:webp", (400, 200), "image/webp"),
        ("resize=width:1000", (1000, 500), "image/png"),
    ],
)
async def test_an_svg_is_drawn_for_image_tasks(
    harness: Harness, chain: str, size: tuple[int, int], mimetype: str
) -> None:
    handle = await stored(harness, PICTURE.encode(), "p.svg")
    resp, body = await get(harness, f"/{chain}/{handle}")
    assert resp.headers["Content-Type"] == mimetype
    image = decoded(body)
    assert (image.width, image.height) == size
    red = [round(v) for v in image.getpoint(size[0] // 4, size[1] // 2)[:3]]
    blue = [round(v) for v in image.getpoint(3 * size[0] // 4, size[1] // 2)[:3]]
    assert red[0] > 240 and red[2] < 15 and blue[2] > 240 and blue[0] < 15


async def test_imagesize_of_an_svg(harness: Harness) -> None:
    handle = await stored(harness, PICTURE.encode(), "p.svg")
    resp, _ = await get(harness, f"/imagesize/{handle}")
    assert await resp.json() == {"width": 400, "height": 200}


def hostile(port: int) -> list[str]:
    url = f"http://127.0.0.1:{port}/x"
    return [
        f'{HEAD} width="10" height="10"><image xlink:href="{url}" width="10" height="10"/></svg>',
        f'{HEAD} width="10" height="10"><image href="file:///etc/passwd"/></svg>',
        f'{HEAD} width="10" height="10"><rect width="9" height="9" fill="url({url}#p)"/></svg>',
        f'{HEAD} width="10" height="10"><style>@import "{url}";</style></svg>',
        f'{HEAD} width="10" height="10"><filter id="f"><feImage href="{url}"/></filter></svg>',
        f'<!DOCTYPE svg [<!ENTITY x SYSTEM "{url}">]>{HEAD}><text>&x;</text></svg>',
        f'<!DOCTYPE svg [<!ENTITY x SYSTEM "file:///etc/passwd">]>{HEAD}><text>&x;</text></svg>',
        '<!DOCTYPE svg [<!ENTITY a "ha"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">'
        '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;">]>' + f"{HEAD}><text>&c;</text></svg>",
    ]


async def test_hostile_svgs_are_a_422_and_reach_nothing(
    harness: Harness, listener: tuple[int, list[str]]
) -> None:
    port, seen = listener
    for document in hostile(port):
        handle = await stored(harness, document.encode(), "h.svg")
        resp = await harness.cdn.get(f"/resize=width:10/{handle}")
        assert resp.status == 422, document
        assert await code_of(resp) == "INVALID_IMAGE"
        assert "root:" not in await resp.text()  # nothing of the file read
    # a stylesheet named by a processing instruction is dropped: the rest is drawn
    style = f'<?xml-stylesheet href="http://127.0.0.1:{port}/s.css"?>{HEAD} width="8" height="8"/>'
    handle = await stored(harness, style.encode(), "s.svg")
    _, body = await get(harness, f"/output=format:png/{handle}")
    assert decoded(body).width == 8
    await asyncio.sleep(0.2)
    assert seen == []
    _, body = await get(harness, f"/resize=width:20/{await stored(harness, PICTURE.encode())}")
    assert decoded(body).width == 20  # the server goes on serving


async def test_an_svg_too_large_to_draw_is_refused_before_drawing(harness: Harness) -> None:
    huge = f'{HEAD} width="100000" height="100000"><rect width="9" height="9"/></svg>'
    handle = await stored(harness, huge.encode(), "big.svg")
    resp = await harness.cdn.get(f"/output=format:png/{handle}")
    assert resp.status == 422 and await code_of(resp) == "IMAGE_TOO_LARGE"


def embedding(*sides: tuple[int, int]) -> bytes:
    """A 20x20 SVG holding a PNG of one colour of each size (a few hundred bytes each)."""
    urls = []
    for width, height in sides:
        png = pyvips.Image.black(width, height).write_to_buffer(".png")
        urls.append("data:image/png;base64," + base64.b64encode(png).decode())
    images = "".join(f'<image width="20" height="20" xlink:href="{u}"/>' for u in urls)
    red = '<rect width="20" height="20" fill="red"/>'
    return f'{HEAD} width="20" height="20">{red}{images}</svg>'.encode()


@pytest.mark.settings(processing_max_input_pixels=10_000, processing_max_total_pixels=30_000)
@pytest.mark.parametrize(
    ("sides", "refused"),
    [
        ([(100, 100)], None),
        ([(101, 100)], "101x100 PNG: 10100 pixels; at most 10000"),
        ([(100, 100), (100, 100)], None),
        ([(100, 100)] * 3 + [(1, 1)], "SVG's data: images have 30001 pixels in all"),
        ([(100, 100), (100, 100), (99, 97)], "canvas and data: images have 30003"),
    ],
)
async def test_an_svgs_embedded_images_are_held_to_the_pixel_limits(
    harness: Harness, sides: list[tuple[int, int]], refused: str | None
) -> None:
    """A prober's 187 KB SVG of 100x100 holding a 12000x12000 PNG was decoded whole
    (144 megapixels past the 100 allowed, 1.27 GB in the job) and answered 200."""
    handle = await stored(harness, embedding(*sides), "e.svg")
    if refused is None:
        _, body = await get(harness, f"/resize=width:10/{handle}")
        assert decoded(body).getpoint(5, 5)[:3] == [0, 0, 0]  # drawn over the red
        return
    resp = await harness.cdn.get(f"/cache=false/resize=width:10/{handle}")
    assert resp.status == 422 and await code_of(resp) == "IMAGE_TOO_LARGE"
    assert refused in (await resp.json())["error"]["message"]
