"""``pdfcreate`` (issue 26): stored images and PDFs merged into one new PDF in the URL's
order (``/pdfcreate/[h1,h2,...]``), checked page by page with PDFium; generated lists of
handles; limits and refusals."""

from __future__ import annotations

import contextlib
import io

import pypdfium2 as pdfium
import pytest
import pyvips
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.api.harness import Harness
from tests.api.sites import serving
from tests.api.test_transform import stored
from tests.api.test_transform_rules import code_of
from tests.processing import pdfs

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")
Colour = tuple[float, float, float]


def solid(colour: Colour, size: tuple[int, int], fmt: str = ".png") -> bytes:
    rgb = [round(c * 255) for c in colour]
    image = (pyvips.Image.black(*size) + rgb).cast("uchar").copy(interpretation="srgb")
    return bytes(image.write_to_buffer(fmt))


def pages_of(body: bytes) -> list[tuple[tuple[float, float], list[int]]]:
    """Each page's size in points and the colour at its centre, drawn by PDFium."""
    document = pdfium.PdfDocument(io.BytesIO(body))
    found = []
    try:
        for page in document:
            width, height = page.get_size()
            image = page.render(scale=0.25).to_pil().convert("RGB")
            centre = list(image.getpixel((image.width // 2, image.height // 2)))
            found.append(((round(width), round(height)), centre))
            page.close()
    finally:
        document.close()
    return found


def near(found: list[int], colour: Colour) -> bool:
    return all(abs(f - c * 255) <= 8 for f, c in zip(found, colour, strict=True))


async def test_images_and_pdfs_in_the_urls_order(harness: Harness) -> None:
    three = await stored(harness, pdfs.three_pages(), "three.pdf")
    blue = await stored(harness, solid(pdfs.BLUE, (144, 72)), "blue.png")
    green = await stored(harness, solid(pdfs.GREEN, (100, 50), ".jpg"), "green.jpg")
    resp = await harness.cdn.get(f"/pdfcreate/[{blue},{three},{green}]")
    body = await resp.read()
    assert resp.status == 200, body[:300]
    assert resp.headers["Content-Type"] == "application/pdf"
    found = pages_of(body)
    assert [size for size, _ in found] == [(144, 72), (612, 792), (300, 200), (400, 400), (100, 50)]
    wanted = [pdfs.BLUE, pdfs.RED, pdfs.GREEN, pdfs.BLUE, pdfs.GREEN]
    assert all(near(c, w) for (_, c), w in zip(found, wanted, strict=True)), found
    one = await harness.cdn.get(f"/pdfcreate/{blue}")  # one file: a PDF of it
    assert pages_of(await one.read())[0][0] == (144, 72)


@given(size=st.tuples(st.integers(10, 300), st.integers(10, 300)), first=st.booleans())
@settings(
    max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
async def test_an_svg_is_a_page_like_any_image(
    harness: Harness, size: tuple[int, int], first: bool
) -> None:
    """An SVG in the list was 415 while watermark and collage took one: it is checked and
    rewritten as every SVG source is, then drawn at its own size as a page."""
    w, h = size
    svg = f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}">{{}}</svg>'
    drawn = svg.format(f'<rect width="{w}" height="{h}" fill="#0000ff"/>')
    logo = await stored(harness, drawn.encode(), "logo.svg")
    green = await stored(harness, solid(pdfs.GREEN, (100, 50), ".jpg"), "green.jpg")
    listed = [logo, green] if first else [green, logo]
    resp = await harness.cdn.get(f"/pdfcreate/[{','.join(listed)}]")
    body = await resp.read()
    assert resp.status == 200, body[:300]
    found = pages_of(body)
    page = found[0 if first else 1]
    assert page[0] == (w, h) and near(page[1], pdfs.BLUE), found
    hostile = svg.format('<image href="file:///etc/passwd" width="5" height="5"/>')
    bad = await stored(harness, hostile.encode(), "bad.svg")
    resp = await harness.cdn.get(f"/pdfcreate/[{green},{bad}]")
    assert resp.status == 422 and await code_of(resp) == "INVALID_IMAGE"


@given(st.lists(st.sampled_from(["r", "g", "b", "doc"]), min_size=1, max_size=5, unique=True))
@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
async def test_any_list_of_handles_gives_their_pages_in_order(
    harness: Harness, names: list[str]
) -> None:
    made = {
        "r": (solid(pdfs.RED, (40, 30)), [pdfs.RED]),
        "g": (solid(pdfs.GREEN, (30, 40)), [pdfs.GREEN]),
        "b": (solid(pdfs.BLUE, (50, 50), ".jpg"), [pdfs.BLUE]),
        "doc": (pdfs.three_pages(), [pdfs.RED, pdfs.GREEN, pdfs.BLUE]),
    }
    handles = [await stored(harness, made[n][0], f"{n}.bin") for n in names]
    resp = await harness.cdn.get(f"/pdfcreate/[{','.join(handles)}]")
    body = await resp.read()
    assert resp.status == 200, body[:300]
    colours = [c for _, c in pages_of(body)]
    wanted = [colour for n in names for colour in made[n][1]]
    assert len(colours) == len(wanted)
    assert all(near(c, w) for c, w in zip(colours, wanted, strict=True)), (names, colours)


@pytest.mark.parametrize(
    ("tail", "status", "code"),
    [
        ("resize=width:10/pdfcreate/[{a},{b}]", 400, "INVALID_PARAMETER"),
        ("pdfcreate/resize=width:10/[{a},{b}]", 400, "INVALID_PARAMETER"),
        ("pdfcreate/[{a},{txt}]", 415, "NOT_AN_IMAGE"),
        ("pdfcreate/[{a},nosuchhandle12345678]", 404, "HANDLE_NOT_FOUND"),
        ("pdfcreate/[{a},{bad}]", 422, "INVALID_DOCUMENT"),
        ("pdfcreate=engine:x,size:3/[{a},{b}]", 400, "INVALID_PARAMETER"),
    ],
)
async def test_refusals(harness: Harness, tail: str, status: int, code: str) -> None:
    a = await stored(harness, pdfs.three_pages(), "a.pdf")
    b = await stored(harness, solid(pdfs.RED, (10, 10)), "b.png")
    txt = await stored(harness, b"just text\n", "t.txt")
    bad = await stored(harness, b"%PDF-1.7\ngarbage", "bad.pdf")
    resp = await harness.cdn.get("/" + tail.format(a=a, b=b, txt=txt, bad=bad))
    assert resp.status == status, await resp.text()
    assert await code_of(resp) == code


async def test_too_many_sources_are_refused(harness: Harness) -> None:
    handle = await stored(harness, solid(pdfs.RED, (10, 10)), "r.png")
    others = [await stored(harness, solid(pdfs.RED, (10, 10)), f"r{i}.png") for i in range(40)]
    resp = await harness.cdn.get(f"/pdfcreate/[{','.join([handle, *others])}]")
    assert resp.status == 400 and await code_of(resp) == "INVALID_PARAMETER"


async def test_the_page_limit_holds(harness: Harness) -> None:
    from stowage.processing import pageimages

    assert pageimages.MAX_CREATED_PAGES == 2000
    many = pdfs.pages([(10, 10)] * 700)
    handles = [await stored(harness, many, f"m{i}.pdf") for i in range(3)]
    resp = await harness.cdn.get(f"/pdfcreate/[{','.join(handles)}]")
    assert resp.status == 422 and await code_of(resp) == "DOCUMENT_TOO_LARGE"


@given(st.lists(st.sampled_from(["r", "g", "doc"]), min_size=1, max_size=4), st.booleans())
@settings(
    max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
async def test_the_new_pdf_can_be_stored(harness: Harness, names: list[str], urls: bool) -> None:
    """``pdfcreate/store/[h1,h2]`` was a 400 "pdfcreate answers JSON; it cannot be stored":
    its answer is a PDF, a file, stored as zip's and animate's are; so from a list of URLs."""
    made = {
        "r": (solid(pdfs.RED, (40, 30)), [pdfs.RED]),
        "g": (solid(pdfs.GREEN, (30, 40), ".jpg"), [pdfs.GREEN]),
        "doc": (pdfs.three_pages(), [pdfs.RED, pdfs.GREEN, pdfs.BLUE]),
    }
    key = harness.open_app.api_key
    if urls:
        async with contextlib.AsyncExitStack() as stack:
            kinds = {"r": "image/png", "g": "image/jpeg", "doc": "application/pdf"}
            sites = {
                n: await stack.enter_async_context(serving(f"/{n}", made[n][0], kinds[n]))
                for n in dict.fromkeys(names)
            }
            listed = ",".join(f'"{sites[n]}"' for n in names)
            resp = await harness.api.post(f"/process/{key}/pdfcreate/store/[{listed}]")
            result = await resp.json()
    else:
        handles = {n: await stored(harness, made[n][0], f"{n}.bin") for n in set(names)}
        listed = ",".join(handles[n] for n in names)
        resp = await harness.api.post(f"/process/{key}/pdfcreate/store/[{listed}]")
        result = await resp.json()
    assert resp.status == 200, result
    assert result["type"] == "application/pdf" and result["filename"].endswith(".pdf"), result
    body = await (await harness.cdn.get(f"/{result['handle']}")).read()
    assert len(body) == result["size"]
    colours = [c for _, c in pages_of(body)]
    wanted = [colour for n in names for colour in made[n][1]]
    assert len(colours) == len(wanted)
    assert all(near(c, w) for c, w in zip(colours, wanted, strict=True)), (names, colours)
