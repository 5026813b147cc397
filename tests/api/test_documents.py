"""PDFs on the CDN through real transformation URLs (issue 26): a page as an image at
a density, chained with image tasks, pdfinfo and pdfconvert; and hostile PDFs, each a
JSON 4xx or a 422 within the deadline while the server goes on serving."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator

import pypdfium2 as pdfium
import pytest

from tests.api.harness import Harness
from tests.api.test_transform import decoded, get, picture, stored
from tests.api.test_transform_rules import code_of
from tests.processing import pdfs

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


def colour_at(body: bytes, x: int, y: int) -> list[int]:
    image = decoded(body)
    return [round(v) for v in image.getpoint(x, y)[:3]]


def near(found: list[int], wanted: tuple[float, float, float]) -> bool:
    return all(abs(f - w * 255) <= 3 for f, w in zip(found, wanted, strict=True))


async def pdf_handle(harness: Harness, data: bytes | None = None, name: str = "d.pdf") -> str:
    return await stored(harness, data if data is not None else pdfs.three_pages(), name)


@pytest.mark.parametrize(
    ("page", "density", "size", "colour"),
    [
        (1, 72, (612, 792), pdfs.RED),
        (2, 72, (300, 200), pdfs.GREEN),
        (3, 72, (400, 400), pdfs.BLUE),
        (2, 144, (600, 400), pdfs.GREEN),
        (3, 36, (200, 200), pdfs.BLUE),
    ],
)
async def test_a_page_at_a_density_has_its_box_in_pixels_and_its_content(
    harness: Harness,
    page: int,
    density: int,
    size: tuple[int, int],
    colour: tuple[float, float, float],
) -> None:
    handle = await pdf_handle(harness)
    resp, body = await get(harness, f"/output=format:png,page:{page},density:{density}/{handle}")
    assert resp.headers["Content-Type"] == "image/png"
    image = decoded(body)
    assert (image.width, image.height) == size
    for x, y in ((0, 0), (size[0] // 2, size[1] // 2), (size[0] - 1, size[1] - 1)):
        assert near(colour_at(body, x, y), colour), (page, x, y)


async def test_the_default_is_page_one_at_72_dpi_as_png(harness: Harness) -> None:
    handle = await pdf_handle(harness)
    resp, body = await get(harness, f"/resize=width:306/{handle}")
    assert resp.headers["Content-Type"] == "image/png"
    assert (decoded(body).width, decoded(body).height) == (306, 396)
    _, body = await get(harness, f"/imagesize/{handle}")
    assert body and (await (await harness.cdn.get(f"/imagesize/{handle}")).json()) == {
        "width": 612,
        "height": 792,
    }


@pytest.mark.settings(processing_small_job_seconds=3)  # drawing it takes 6 s or more
async def test_imagesize_of_a_page_reads_its_box_without_drawing_it(harness: Harness) -> None:
    """A page that takes seconds to draw (it once held a job slot for 30 s, as long as a
    resize of it did): its size comes from its box, well within a small job's time."""
    handle = await pdf_handle(harness, pdfs.slow_to_draw())
    before = _big_jobs(await harness.metrics())
    for tasks, size in (("imagesize", (600, 600)), ("output=density:144/imagesize", (1200, 1200))):
        resp = await harness.cdn.get(f"/{tasks}/{handle}")
        assert resp.status == 200, await resp.text()
        assert tuple((await resp.json()).values()) == size, tasks
    assert _big_jobs(await harness.metrics()) == before  # none ran past a small job's time


@pytest.mark.settings(processing_small_drawing_seconds=0.2)
async def test_a_job_process_start_is_not_counted_in_its_first_job(harness: Harness) -> None:
    """A new job process's start (Python, the engines' imports: 0.4 s here, 1-3 s on a
    loaded machine) counted in its first job's time: a PDF's ``imagesize`` on a fresh
    pool overran a drawn source's time in a small slot and ran again as a big job."""
    handles = [await pdf_handle(harness, pdfs.slow_to_draw(curves=10 + i)) for i in range(3)]
    before = _big_jobs(await harness.metrics())
    answers = await asyncio.gather(*(harness.cdn.get(f"/imagesize/{h}") for h in handles))
    for resp in answers:
        assert resp.status == 200, await resp.text()
    assert _big_jobs(await harness.metrics()) == before


def _big_jobs(metrics: str) -> float:
    found = re.search(r"^stowage_processing_big_jobs_total (\S+)$", metrics, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


async def test_a_resize_after_the_page_gives_its_exact_size(harness: Harness) -> None:
    handle = await pdf_handle(harness)
    for chain, size in (
        ("resize=width:300", (300, 388)),
        ("resize=width:300,height:300", (232, 300)),
        ("resize=width:100,height:100,fit:crop", (100, 100)),
        ("resize=width:2000,fit:max", (612, 792)),  # never enlarged past the page at 72 DPI
        ("output=format:png,density:144/resize=width:1000,fit:max", (1000, 1294)),
    ):
        _, body = await get(harness, f"/{chain}/{handle}")
        assert (decoded(body).width, decoded(body).height) == size, chain
        assert near(colour_at(body, size[0] // 2, size[1] // 2), pdfs.RED), chain


async def test_the_thumbnail_chain_of_an_uploaded_pdf(harness: Harness) -> None:
    handle = await pdf_handle(harness)
    chain = "output=format:png,density:15,compress:true/resize=height:36"
    _, body = await get(harness, f"/{chain}/{handle}")
    image = decoded(body)
    assert image.height == 36 and image.width == round(36 * 612 / 792)
    assert near(colour_at(body, image.width // 2, 18), pdfs.RED)
    _, body = await get(harness, f"/output=format:jpg,page:2/flip/{handle}")
    assert decoded(body).get("vips-loader") == "jpegload_buffer"


async def test_the_js_sdk_form_with_an_api_key(harness: Harness) -> None:
    handle = await pdf_handle(harness)
    key = harness.open_app.api_key
    _, body = await get(harness, f"/{key}/output=format:webp,page:3,density:18/{handle}")
    assert (decoded(body).width, decoded(body).height) == (100, 100)


async def test_a_page_past_the_end_is_a_400_naming_it(harness: Harness) -> None:
    handle = await pdf_handle(harness)
    resp = await harness.cdn.get(f"/output=format:png,page:4/{handle}")
    assert resp.status == 400
    error = (await resp.json())["error"]
    assert error["code"] == "INVALID_PARAMETER" and "no page 4" in error["message"]
    resp = await harness.cdn.get(f"/pdfconvert=pages:[2,7]/{handle}")
    assert resp.status == 400 and "no page 7" in (await resp.json())["error"]["message"]


async def test_pdfinfo_answers_the_page_count_and_sizes(harness: Harness) -> None:
    handle = await pdf_handle(harness)
    resp, _ = await get(harness, f"/pdfinfo/{handle}")
    assert resp.headers["Content-Type"].startswith("application/json")
    assert await resp.json() == {
        "pages": 3,
        "dimensions": {"width": 612, "height": 792},
        "page_sizes": [
            {"width": 612, "height": 792},
            {"width": 300, "height": 200},
            {"width": 400, "height": 400},
        ],
    }
    image = await stored(harness, picture(), "p.jpg")
    resp = await harness.cdn.get(f"/pdfinfo/{image}")
    assert resp.status == 415 and await code_of(resp) == "NOT_A_PDF"


async def test_pdfinfo_colorinfo_tells_each_page_in_colour_or_grey(harness: Harness) -> None:
    grey = (0.4, 0.4, 0.4)
    document = pdfs.coloured([pdfs.LETTER] * 3, [pdfs.RED, grey, pdfs.BLUE])
    handle = await pdf_handle(harness, document)
    resp, _ = await get(harness, f"/pdfinfo=colorinfo:true/{handle}")
    found = await resp.json()
    assert found["pages"] == 3
    assert found["colorinfo"] == [
        {"page": 1, "color": True},
        {"page": 2, "color": False},
        {"page": 3, "color": True},
    ]


async def test_output_docinfo_answers_as_pdfinfo_does(harness: Harness) -> None:
    handle = await pdf_handle(harness)
    _, expected = await get(harness, f"/pdfinfo/{handle}")
    for path in (f"/output=docinfo:true/{handle}", f"/output=format:png,docinfo:true/{handle}"):
        resp, body = await get(harness, path)
        assert resp.headers["Content-Type"].startswith("application/json"), path
        assert body == expected, path
    resp, body = await get(harness, f"/output=docinfo:false/{handle}")  # the page, as usual
    assert resp.headers["Content-Type"] == "image/png"
    image = await stored(harness, picture(), "p.jpg")
    resp = await harness.cdn.get(f"/output=docinfo:true/{image}")
    assert resp.status == 415 and await code_of(resp) == "NOT_A_PDF"
    assert "docinfo" in (await resp.json())["error"]["message"]


def pdf_pages(body: bytes) -> list[tuple[tuple[float, float], list[int]]]:
    """Each page's size in points and the colour at its centre, drawn at 36 DPI."""
    document = pdfium.PdfDocument(body)
    found = []
    for index in range(len(document)):
        page = document[index]
        bitmap = page.render(scale=0.5, rev_byteorder=True)
        image = bitmap.to_pil().convert("RGB")
        centre = list(image.getpixel((image.width // 2, image.height // 2)))
        found.append(((round(page.get_width(), 1), round(page.get_height(), 1)), centre))
    return found


async def test_pdfconvert_picks_pages_in_order(harness: Harness) -> None:
    handle = await pdf_handle(harness)
    resp, body = await get(harness, f'/pdfconvert=pages:[3,"1-2"]/{handle}')
    assert resp.headers["Content-Type"] == "application/pdf"
    found = pdf_pages(body)
    assert [size for size, _ in found] == [(400, 400), (612, 792), (300, 200)]
    colours = [pdfs.BLUE, pdfs.RED, pdfs.GREEN]
    assert all(near(c, want) for (_, c), want in zip(found, colours, strict=True))
    _, body = await get(harness, f"/pdfconvert=pages:[2-]/{handle}")
    assert len(pdf_pages(body)) == 2


async def test_pdfconvert_page_format_and_orientation(harness: Harness) -> None:
    handle = await pdf_handle(harness)
    _, body = await get(harness, f"/pdfconvert=pageformat:a4,pages:[1,2]/{handle}")
    found = pdf_pages(body)
    assert [size for size, _ in found] == [(595.3, 841.9), (841.9, 595.3)]  # each keeps its own
    assert near(found[0][1], pdfs.RED) and near(found[1][1], pdfs.GREEN)
    _, body = await get(harness, f"/pdfconvert=pageformat:a5,pageorientation:landscape/{handle}")
    assert {size for size, _ in pdf_pages(body)} == {(595.3, 419.5)}
    _, body = await get(harness, f"/pdfconvert=pageorientation:landscape,pages:[1]/{handle}")
    document = pdfium.PdfDocument(body)
    assert document[0].get_rotation() == 90
    assert (document[0].get_width(), document[0].get_height()) == (792, 612)


async def test_output_to_pdf_lays_pages_out_as_pdfconvert_does(harness: Harness) -> None:
    handle = await pdf_handle(harness)
    for options in (
        "pageformat:a5,pageorientation:landscape",
        "pageformat:a4",
        "pageorientation:portrait",
    ):
        _, by_output = await get(harness, f"/output=format:pdf,{options}/{handle}")
        _, by_convert = await get(harness, f"/pdfconvert={options}/{handle}")
        assert pdf_pages(by_output) == pdf_pages(by_convert), options
    _, body = await get(
        harness, f"/output=format:pdf,pageformat:a5,pageorientation:landscape/{handle}"
    )
    assert {size for size, _ in pdf_pages(body)} == {(595.3, 419.5)}
    image = await stored(harness, picture(), "p.jpg")  # an image: the options do not apply
    resp = await harness.cdn.get(
        f"/output=format:png,pageformat:a4,pageorientation:landscape/{image}"
    )
    assert resp.status == 200 and resp.headers["Content-Type"] == "image/png"


async def test_a_pdf_asked_as_a_pdf_is_itself(harness: Harness) -> None:
    """``output=format:pdf`` alone on a PDF (the schema's format list holds pdf) was a
    400 naming no format it could be converted to: it is the document as it is."""
    for data in (pdfs.three_pages(), pdfs.quadrants(300, 200), pdfs.many_pages(7)):
        handle = await stored(harness, data, "doc.pdf")
        resp, body = await get(harness, f"/output=format:pdf/{handle}")
        assert resp.headers["Content-Type"] == "application/pdf" and body == data
    resp = await harness.cdn.get(f"/output=format:pdf/resize=width:10/{handle}")
    assert resp.status == 400


# -- hostile PDFs ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("data", "chain", "status", "code"),
    [
        (pdfs.truncated(), "output=format:png", 422, "INVALID_DOCUMENT"),
        (pdfs.garbage(), "output=format:png", 422, "INVALID_DOCUMENT"),
        (pdfs.garbage(), "pdfinfo", 422, "INVALID_DOCUMENT"),
        (pdfs.lying_count(100_000), "output=format:png", 422, "DOCUMENT_TOO_LARGE"),
        (pdfs.lying_count(100_000), "pdfinfo", 422, "DOCUMENT_TOO_LARGE"),
        (pdfs.huge_box(200), "output=format:png,density:500", 422, "IMAGE_TOO_LARGE"),
        (pdfs.huge_box(200), "output=format:png", 422, "IMAGE_TOO_LARGE"),
    ],
)
async def test_hostile_pdfs_are_refused_at_once(
    harness: Harness, data: bytes, chain: str, status: int, code: str
) -> None:
    handle = await pdf_handle(harness, data)
    started = time.monotonic()
    resp = await harness.cdn.get(f"/{chain}/{handle}")
    assert resp.status == status and await code_of(resp) == code
    assert time.monotonic() - started < 5  # decided from the header, nothing drawn
    _, body = await get(harness, f"/resize=width:10/{await pdf_handle(harness)}")
    assert decoded(body).width == 10


async def test_a_huge_page_at_a_small_density_is_drawn(harness: Harness) -> None:
    handle = await pdf_handle(harness, pdfs.huge_box(200))  # 14,400 pt a side
    _, body = await get(harness, f"/output=format:png,density:36/{handle}")
    assert (decoded(body).width, decoded(body).height) == (7200, 7200)


@pytest.fixture
async def listener() -> AsyncIterator[tuple[int, list[str]]]:
    """A loopback HTTP listener that records every connection it gets."""
    seen: list[str] = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(str(await reader.read(200)))
        writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield port, seen


async def test_actions_links_and_external_streams_reach_nothing(
    harness: Harness, listener: tuple[int, list[str]]
) -> None:
    port, seen = listener
    handle = await pdf_handle(harness, pdfs.hostile_actions(port))
    for chain in ("output=format:png,density:50", "pdfinfo", "pdfconvert=pages:[1]"):
        resp = await harness.cdn.get(f"/{chain}/{handle}")
        assert resp.status == 200, await resp.read()
        if chain.startswith("output"):
            assert near(colour_at(await resp.read(), 10, 10), pdfs.RED)
    await asyncio.sleep(0.5)
    assert seen == []  # PDFium opened no connection, whatever the document asked


@pytest.mark.settings(processing_job_seconds=1, processing_jobs=1)
async def test_an_endless_page_is_stopped_at_the_deadline(harness: Harness) -> None:
    handle = await pdf_handle(harness, pdfs.endless_drawing())
    started = time.monotonic()
    resp = await harness.cdn.get(f"/output=format:png/{handle}")
    assert resp.status == 422 and await code_of(resp) == "PROCESSING_TIMEOUT"
    assert time.monotonic() - started < 8  # 1 s, the pool's grace, a process start
    _, body = await get(harness, f"/output=format:png,page:2/{await pdf_handle(harness)}")
    assert decoded(body).width == 300  # the slot and the server go on


async def test_the_urls_the_sdks_build(harness: Harness) -> None:
    """filestack-python's Filelink builds these; filestack-js 4.3.8's client.transform
    builds the same tasks after the API key (its output checked by hand, written here)."""
    from filestack import Filelink

    handle = await pdf_handle(harness)
    key = harness.open_app.api_key
    link = Filelink(handle)
    info = link.pdf_info().url.split("filestackcontent.com", 1)[1]
    resp, _ = await get(harness, info)
    assert (await resp.json())["pages"] == 3
    made = link.pdf_convert(pages=[3, "1-2"], pageformat="letter", pageorientation="portrait")
    _, body = await get(harness, made.url.split("filestackcontent.com", 1)[1])
    assert [size for size, _ in pdf_pages(body)] == [(612, 792)] * 3
    js = [
        f"/{key}/pdfconvert=pages:[1,2-3],pageformat:a4,pageorientation:landscape/{handle}",
        f"/{key}/output=format:png,density:15,compress:true/resize=height:36/{handle}",
        f"/{key}/pdfinfo/{handle}",
    ]
    for path in js:
        await get(harness, path)


async def test_pdfconvert_can_be_stored(harness: Harness) -> None:
    handle = await pdf_handle(harness, name="report.pdf")
    resp = await harness.api.post(f"/process/pdfconvert=pages:[2]/store/{handle}")
    assert resp.status == 200, await resp.text()
    made = await resp.json()
    assert made["type"] == "application/pdf" and made["filename"] == "report.pdf"
    _, body = await get(harness, f"/{made['handle']}")
    assert [size for size, _ in pdf_pages(body)] == [(300, 200)]
    resp = await harness.api.post(f"/process/pdfinfo/store/{handle}")
    assert resp.status == 400 and await code_of(resp) == "INVALID_PARAMETER"


async def test_an_overwritten_pdf_gets_new_pages_and_a_deleted_one_none(
    harness: Harness,
) -> None:
    app = harness.open_app
    handle = await pdf_handle(harness)
    resp, _ = await get(harness, f"/pdfinfo/{handle}")
    assert (await resp.json())["pages"] == 3
    _, body = await get(harness, f"/output=format:png,page:1/{handle}")
    assert near(colour_at(body, 5, 5), pdfs.RED)
    params = harness.policy(app, call=["write"], handle=handle)
    new = pdfs.coloured([pdfs.LETTER], [pdfs.BLUE])
    resp = await harness.api.post(f"/api/file/{handle}", params=params, data=new)
    assert resp.status == 200, await resp.text()
    resp, _ = await get(harness, f"/pdfinfo/{handle}")
    assert (await resp.json())["pages"] == 1  # not the cached answer of the old version
    _, body = await get(harness, f"/output=format:png,page:1/{handle}")
    assert near(colour_at(body, 5, 5), pdfs.BLUE)
    params = harness.policy(app, call=["remove"], handle=handle)
    assert (await harness.api.delete(f"/api/file/{handle}", params=params)).status == 200
    assert (await harness.cdn.get(f"/pdfinfo/{handle}")).status == 404
