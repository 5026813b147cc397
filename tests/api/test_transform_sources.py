"""Transformations of several stored files (processing/composite.py, archive.py): each
source authorised like the main one, their number and bytes limited, the results right
where it matters (pixels, frames, archive entries)."""

from __future__ import annotations

import io
import json
import math
import zipfile
from urllib.parse import unquote

import pytest
import pyvips
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stowage.config import MiB
from tests.api.harness import Harness
from tests.api.test_transform import decoded, get, stored
from tests.api.test_transform_rules import code_of

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")
COLOURS = {"r": [255, 0, 0], "g": [0, 255, 0], "b": [0, 0, 255]}
# Lists of the three colours holding a repeat somewhere (the case the service once
# dropped: frames, cells and entries are the list as written).
REPEATING = st.lists(st.sampled_from(sorted(COLOURS)), min_size=1, max_size=5).flatmap(
    lambda names: st.permutations([*names, names[0]])
)
GENERATED = settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def plain(width: int, height: int, colour: list[int], fmt: str = ".png") -> bytes:
    image = pyvips.Image.black(width, height).new_from_image(colour).cast("uchar")
    data: bytes = image.write_to_buffer(fmt)
    return data


def colour(image: pyvips.Image, x: int, y: int) -> tuple[int, ...]:
    return tuple(round(v) for v in image(x, y)[:3])


async def test_watermark_composites_the_second_file(harness: Harness) -> None:
    base = await stored(harness, plain(200, 100, [255, 0, 0]), "base.png")
    mark = await stored(harness, plain(40, 20, [0, 0, 255]), "mark.png")
    _, body = await get(harness, f"/watermark=file:{mark},position:[bottom,right]/{base}")
    image = decoded(body)
    assert (image.width, image.height) == (200, 100)
    assert colour(image, 190, 95) == (0, 0, 255) and colour(image, 10, 10) == (255, 0, 0)
    _, body = await get(harness, f"/watermark=file:{mark},size:200,position:top/{base}")
    assert colour(decoded(body), 100, 30) == (0, 0, 255)  # 80x40, centred at the top
    assert colour(decoded(body), 100, 45) == (255, 0, 0)


@pytest.mark.parametrize("side", [7, 64])
async def test_an_svg_logo_is_a_watermark(harness: Harness, side: int) -> None:
    base = await stored(harness, plain(200, 100, [255, 0, 0]), "base.png")
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{side}" height="{side}">'
        f'<rect width="{side}" height="{side}" fill="#0000ff"/>{{}}</svg>'
    )
    mark = await stored(harness, svg.format("").encode(), "logo.svg")
    _, body = await get(harness, f"/watermark=file:{mark},size:40/{base}")
    image = decoded(body)
    assert colour(image, 100, 50) == (0, 0, 255) and colour(image, 5, 5) == (255, 0, 0)
    hostile = svg.format('<image href="http://127.0.0.1:9/x.png" width="1" height="1"/>')
    bad = await stored(harness, hostile.encode(), "bad.svg")
    resp = await harness.cdn.get(f"/watermark=file:{bad}/{base}")
    assert resp.status == 422 and await code_of(resp) == "INVALID_IMAGE"


async def test_each_source_is_authorised(harness: Harness) -> None:
    app = harness.secure_app
    base = await stored(harness, plain(50, 50, [255, 0, 0]), "a.png", app=app)
    mark = await stored(harness, plain(10, 10, [0, 0, 255]), "m.png", app=app)
    only_base = harness.policy(app, call=["convert"], handle=base)
    url = f"/{app.api_key}/watermark=file:{mark}/{base}"
    resp = await harness.cdn.get(url, params=only_base)
    assert resp.status == 403 and await code_of(resp) == "POLICY_DENIED"
    resp = await harness.cdn.get(f"/{app.api_key}/animate/[{base},{mark}]", params=only_base)
    assert resp.status == 403
    resp = await harness.cdn.get(f"/{app.api_key}/zip/[{base},{mark}]", params=only_base)
    assert resp.status == 403
    both = harness.policy(app, call=["convert"])
    _, body = await get(harness, url, params=both)
    assert colour(decoded(body), 25, 25) == (0, 0, 255)
    missing = await harness.cdn.get(f"/watermark=file:nosuchhandle00000000/{base}")
    assert missing.status in (401, 404)


async def test_animate_makes_a_gif_of_the_listed_files(harness: Harness) -> None:
    colours = ([255, 0, 0], [0, 0, 255], [0, 255, 0])
    handles = [
        await stored(harness, plain(60, 40, c, ".jpg"), f"{i}.jpg") for i, c in enumerate(colours)
    ]
    resp, body = await get(harness, f"/animate=delay:300,loop:1,width:30/[{','.join(handles)}]")
    assert resp.headers["Content-Type"] == "image/gif"
    strip = pyvips.Image.new_from_buffer(body, "", n=-1)
    assert strip.get("n-pages") == 3 and strip.get("page-height") == 20
    assert strip.get("delay") == [300, 300, 300]
    for index, want in enumerate(colours):
        got = colour(strip, 15, index * 20 + 10)
        assert all(abs(a - b) < 30 for a, b in zip(got, want, strict=True)), (index, got)


async def test_collage_of_the_source_and_files(harness: Harness) -> None:
    base = await stored(harness, plain(100, 100, [255, 0, 0]), "a.png")
    other = await stored(harness, plain(100, 100, [0, 0, 255]), "b.png")
    _, body = await get(harness, f"/collage=files:[{other}],width:210,height:110,margin:10/{base}")
    image = decoded(body)
    assert (image.width, image.height) == (210, 110)
    assert colour(image, 55, 55) == (255, 0, 0) and colour(image, 155, 55) == (0, 0, 255)


async def test_zip_streams_the_files_with_safe_unique_names(harness: Harness) -> None:
    first, second = plain(30, 30, [1, 2, 3]), b"hello, world\n" * 1000
    a = await stored(harness, first, "same.png")
    b = await stored(harness, second, "../../etc/same.png")
    c = await stored(harness, b"x", "same.png")
    resp, body = await get(harness, f"/zip/[{a},{b},{c}]")
    assert resp.headers["Content-Type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(body))
    assert archive.namelist() == ["same.png", "same (2).png", "same (3).png"]
    assert archive.read("same.png") == first and archive.read("same (2).png") == second
    assert archive.testzip() is None
    _, body = await get(harness, f"/zip/{b}")  # filestack-python's Filelink.zip()
    assert zipfile.ZipFile(io.BytesIO(body)).read("same.png") == second
    resp = await harness.cdn.get(f"/resize=width:10/zip/[{a},{b}]")
    assert resp.status == 400 and await code_of(resp) == "INVALID_PARAMETER"


@pytest.mark.settings(processing_max_sources=3, processing_max_sources_bytes=MiB)
async def test_sources_are_limited_in_number_and_bytes(harness: Harness) -> None:
    small = [await stored(harness, plain(10, 10, [0, 0, 0]), f"{i}.png") for i in range(4)]
    resp = await harness.cdn.get(f"/zip/[{','.join(small)}]")
    assert resp.status == 400 and await code_of(resp) == "INVALID_PARAMETER"
    big = await stored(harness, b"\0" * (MiB + 1), "big.bin")
    resp = await harness.cdn.get(f"/zip/[{small[0]},{big}]")
    assert resp.status == 413 and await code_of(resp) == "PAYLOAD_TOO_LARGE"
    _, body = await get(harness, f"/zip/[{','.join(small[:3])}]")
    assert len(zipfile.ZipFile(io.BytesIO(body)).namelist()) == 3


async def test_the_python_sdk_urls_work(harness: Harness) -> None:
    """The paths filestack-python 4.0.0 builds for these tasks, sent to this CDN."""
    import filestack

    base = await stored(harness, plain(100, 100, [255, 0, 0]), "a.png")
    other = await stored(harness, plain(100, 100, [0, 0, 255]), "b.png")
    link = filestack.Filelink(base)
    built = [
        link.watermark(file=other, size=20, position=["bottom", "right"]).url,
        link.collage(files=[other], width=210, height=110, margin=5, color="red", fit="crop").url,
        link.animate(delay=200, loop=1, width=30, align="center", background="white").url,
        link.zip().url,
    ]
    answers = []
    for url in built:
        path = "/" + url.split("/", 3)[3]
        resp, body = await get(harness, path)
        answers.append((resp.headers["Content-Type"], body))
    assert colour(decoded(answers[0][1]), 95, 95) == (0, 0, 255)
    assert (decoded(answers[1][1]).width, decoded(answers[1][1]).height) == (210, 110)
    assert answers[2][0] == "image/gif" and decoded(answers[2][1]).width == 30
    assert answers[3][0] == "application/zip"
    assert zipfile.ZipFile(io.BytesIO(answers[3][1])).namelist() == ["a.png"]


async def test_a_list_of_sources_alone_is_a_client_error(harness: Harness) -> None:
    """A list is read only by animate, pdfcreate and zip: no download, no metadata, and
    no task of one file that would read the first and drop the rest."""
    a = await stored(harness, plain(20, 20, [255, 0, 0]), "a.png")
    b = await stored(harness, plain(20, 20, [0, 0, 255]), "b.png")
    for path in (
        f"/[{a},{b}]",
        f"/cache=false/[{a},{b}]",
        f"/{harness.open_app.api_key}/[{a},{a}]",
        f"/[{a},{b}]/metadata",
        f"/preview/[{a}]",
        f"/flip/[{a},{b}]",  # flipped the first, dropped the second
        f"/collage=files:[{a}],width:100,height:50/[{a},{b}]",
        f"/resize=width:10/store/[{a},{b}]",
    ):
        resp = await harness.cdn.get(path)
        assert resp.status == 400, path
        assert await code_of(resp) == "INVALID_PARAMETER", path


async def _three(harness: Harness) -> dict[str, str]:
    """One stored image of each colour, by its letter."""
    return {k: await stored(harness, plain(40, 20, c), f"{k}.png") for k, c in COLOURS.items()}


def _frames(body: bytes) -> list[tuple[int, ...]]:
    strip = pyvips.Image.new_from_buffer(body, "", n=-1)
    height = strip.get("page-height")
    pages = range(strip.get("n-pages"))
    return [colour(strip, strip.width // 2, page * height + height // 2) for page in pages]


def _near(found: list[tuple[int, ...]], names: list[str]) -> bool:
    wanted = [COLOURS[n] for n in names]
    return len(found) == len(wanted) and all(
        abs(a - b) < 30
        for got, want in zip(found, wanted, strict=True)
        for a, b in zip(got, want, strict=True)
    )


@given(names=REPEATING)
@GENERATED
async def test_animate_has_a_frame_for_each_listed_handle(
    harness: Harness, names: list[str]
) -> None:
    handles = await _three(harness)
    listed = ",".join(handles[n] for n in names)
    _, body = await get(harness, f"/animate=delay:100,width:20/[{listed}]")
    assert _near(_frames(body), names), (names, _frames(body))


@given(names=REPEATING, before=st.booleans())
@GENERATED
async def test_a_watermarks_file_is_no_frame_of_the_animation(
    harness: Harness, names: list[str], before: bool
) -> None:
    """``watermark=file:M/animate/[h1,h2]`` made M a frame of its own: the frames are the
    list's, each with the watermark (a small corner, the middle keeps the frame's colour)."""
    handles = await _three(harness)
    mark = await stored(harness, plain(8, 4, [255, 255, 255]), "mark.png")
    tasks = [f"watermark=file:{mark},size:10,position:[top,left]", "animate=delay:100,width:20"]
    listed = ",".join(handles[n] for n in names)
    _, body = await get(harness, f"/{'/'.join(tasks if before else tasks[::-1])}/[{listed}]")
    assert _near(_frames(body), names), (names, _frames(body))


@given(names=REPEATING)
@GENERATED
async def test_collage_has_a_cell_for_each_listed_file(harness: Harness, names: list[str]) -> None:
    handles = await _three(harness)
    base = await stored(harness, plain(40, 20, [0, 0, 0]), "base.png")
    files = ",".join(handles[n] for n in names)
    size, margin = 300, 10
    _, body = await get(
        harness, f"/collage=files:[{files}],width:{size},height:{size},margin:10,fit:crop/{base}"
    )
    image = decoded(body)
    columns = math.ceil(math.sqrt(len(names) + 1))
    cell = (size - margin * (columns + 1)) // columns  # rows never outnumber columns
    rows = math.ceil((len(names) + 1) / columns)
    cell_h = (size - margin * (rows + 1)) // rows
    found = []
    for index in range(1, len(names) + 1):  # the base image is cell 0
        x = margin + (index % columns) * (cell + margin) + cell // 2
        y = margin + (index // columns) * (cell_h + margin) + cell_h // 2
        found.append(colour(image, x, y))
    assert _near(found, names), (names, found)


@given(names=REPEATING)
@GENERATED
async def test_zip_has_an_entry_for_each_listed_handle(harness: Harness, names: list[str]) -> None:
    handles = await _three(harness)
    _, body = await get(harness, f"/zip/[{','.join(handles[n] for n in names)}]")
    entries = zipfile.ZipFile(io.BytesIO(body)).namelist()
    assert len(entries) == len(names) and len(set(entries)) == len(names)
    found = [decoded(zipfile.ZipFile(io.BytesIO(body)).read(e)) for e in entries]
    assert _near([colour(image, 5, 5) for image in found], names)


@pytest.mark.settings(processing_max_sources=3)
async def test_each_listed_place_counts_towards_the_sources_limit(harness: Harness) -> None:
    red = await stored(harness, plain(10, 10, [255, 0, 0]), "r.png")
    _, body = await get(harness, f"/animate/[{red},{red},{red}]")
    assert len(_frames(body)) == 3
    resp = await harness.cdn.get(f"/animate/[{red},{red},{red},{red}]")
    assert resp.status == 400 and await code_of(resp) == "INVALID_PARAMETER"
    resp = await harness.cdn.get(f"/collage=files:[{red},{red},{red}],width:50,height:50/{red}")
    assert resp.status == 400 and await code_of(resp) == "INVALID_PARAMETER"


@given(names=REPEATING, zips=st.booleans())
@GENERATED
async def test_a_list_sources_result_can_be_stored(
    harness: Harness, names: list[str], zips: bool
) -> None:
    """``animate/store/[...]`` and ``zip/store/[...]``: the result as a new file."""
    handles = await _three(harness)
    task = "zip" if zips else "animate=delay:100,width:20"
    key = harness.open_app.api_key
    resp = await harness.api.get(
        f"/process/{key}/{task}/store/[{','.join(handles[n] for n in names)}]"
    )
    made = await resp.json()
    assert resp.status == 200, made
    assert made["type"] == ("application/zip" if zips else "image/gif")
    assert made["filename"] == ("files.zip" if zips else f"{names[0]}.gif")
    _, body = await get(harness, f"/{made['handle']}")
    if zips:
        archive = zipfile.ZipFile(io.BytesIO(body))
        found = [colour(decoded(archive.read(e)), 5, 5) for e in archive.namelist()]
        assert _near(found, names)
    else:
        assert _near(_frames(body), names), (names, _frames(body))


async def test_the_cdn_sends_a_list_store_to_the_process_address(harness: Harness) -> None:
    handles = await _three(harness)
    tail = f"{harness.open_app.api_key}/zip/store=filename:all.zip/[{handles['r']},{handles['r']}]"
    resp = await harness.cdn.get(f"/{tail}", allow_redirects=False)
    assert resp.status == 307 and unquote(resp.headers["Location"]).endswith(f"/process/{tail}")
    resp = await harness.api.get(f"/process/{tail}")
    made = await resp.json()
    assert resp.status == 200 and made["filename"] == "all.zip", made
    _, body = await get(harness, f"/{made['handle']}")
    assert zipfile.ZipFile(io.BytesIO(body)).namelist() == ["r.png", "r (2).png"]
    resp = await harness.api.get(f"/process/zip/flip/store/[{handles['r']}]")
    assert resp.status == 400 and await code_of(resp) == "INVALID_PARAMETER"


@pytest.mark.parametrize("items", ["{h},", ",", ",{h}", "{h},,{h}", "{h}x", "{h}.png", "{h},[{h}]"])
async def test_a_list_item_that_is_no_handle_is_a_client_error(
    harness: Harness, items: str
) -> None:
    handle = await stored(harness, plain(10, 10, [255, 0, 0]), "r.png")
    for task in ("zip", "animate", "pdfcreate"):
        resp = await harness.cdn.get(f"/{task}/[{items.format(h=handle)}]")
        assert resp.status == 400, (task, items)
        body = await resp.json()
        assert body["error"]["code"] == "INVALID_PARAMETER", body
        assert body["error"]["details"]["parameter"] == "sources", body


# -- a URL source with stored files ----------------------------------------------------------


@given(
    vertical=st.sampled_from(["top", "bottom"]),
    horizontal=st.sampled_from(["left", "right"]),
    collage=st.booleans(),
)
@GENERATED
async def test_a_url_source_takes_a_stored_watermark_or_collage_file(
    harness: Harness, image_site: str, vertical: str, horizontal: str, collage: bool
) -> None:
    """``/<key>/watermark=file:H/<URL>`` answered 400 "source was not read": the files a
    URL source's tasks name were never read. They are, authorised like the URL."""
    key = harness.open_app.api_key
    mark = await stored(harness, plain(30, 15, [0, 0, 255]), "mark.png")
    if collage:
        task = f"collage=files:[{mark}],width:620,height:170,margin:10"
        _, body = await get(harness, f"/{key}/{task}/{image_site}")
        image = decoded(body)
        assert (image.width, image.height) == (620, 170)
        assert colour(image, 465, 85) == (0, 0, 255)  # the stored file's cell
        return
    task = f"watermark=file:{mark},position:[{vertical},{horizontal}]"
    _, body = await get(harness, f"/{key}/{task}/{image_site}")
    image = decoded(body)
    x = 15 if horizontal == "left" else image.width - 15
    y = 7 if vertical == "top" else image.height - 7
    assert (image.width, image.height) == (300, 150) and colour(image, x, y) == (0, 0, 255)


async def test_a_url_sources_stored_file_is_authorised(harness: Harness, image_site: str) -> None:
    app = harness.secure_app
    mark = await stored(harness, plain(10, 10, [0, 0, 255]), "m.png", app=app)
    url_only = harness.policy(
        app, call=["convert"], url="http://127\\.0\\.0\\.1:.*", handle="x" * 20
    )
    resp = await harness.cdn.get(
        f"/{app.api_key}/watermark=file:{mark}/{image_site}", params=url_only
    )
    assert resp.status == 403 and await code_of(resp) == "POLICY_DENIED"
    both = harness.policy(app, call=["convert"], url="http://127\\.0\\.0\\.1:.*")
    resp = await harness.cdn.get(f"/{app.api_key}/watermark=file:{mark}/{image_site}", params=both)
    assert resp.status == 200
    missing = await harness.cdn.get(f"/{app.api_key}/watermark=file:{'n' * 20}/{image_site}")
    assert missing.status in (401, 403, 404)


def _zeros_png(side: int) -> bytes:
    data: bytes = pyvips.Image.black(side, side).cast("uchar").pngsave_buffer(compression=9)
    return data


async def test_a_large_file_listed_twice_is_read_twice_not_held_whole(harness: Harness) -> None:
    """``collage=files:[P,P]`` of a 10000x10000 PNG (97 KB of zeros) was decoded whole
    once for both cells, past the job's memory: ``INVALID_IMAGE``, "unable to call
    VipsForeignSaveJpegTarget". Each cell now reads it in one pass of its own."""
    big = await stored(harness, _zeros_png(10_000), "zeros.png")
    main = await stored(harness, plain(300, 200, [255, 0, 0], ".jpg"), "main.jpg")
    task = f"collage=files:[{big},{big}],width:1000,height:1000,margin:1,color:white"
    _, body = await get(harness, f"/{task}/{main}")
    image = decoded(body)  # three cells of a 2x2 grid, the fourth left white
    assert (image.width, image.height) == (1000, 1000)
    assert colour(image, 250, 250)[0] > 240 and colour(image, 250, 250)[1] < 15  # main: red
    assert colour(image, 750, 250)[:3] == (0, 0, 0)  # the big file's two cells
    assert colour(image, 250, 750)[:3] == (0, 0, 0)
    assert colour(image, 750, 750)[:3] == (255, 255, 255)


async def _another_app(harness: Harness, *options: str) -> str:
    code, out = await harness.cli("apps", "create", "--json", *options)
    assert code == 0, out
    return str(json.loads(out)["api_key"])


async def test_a_keyless_list_reads_only_the_main_files_app(harness: Harness) -> None:
    """Without a key the main (first) file names the app: a file of another app is none
    of its files, as under a key (it was read, zipped and even stored into the first
    app), and one of an app with security is not told apart from a missing one (a 401
    there said that it exists)."""
    mine = await stored(harness, plain(40, 30, [255, 0, 0]), "mine.png")
    again = await stored(harness, plain(40, 30, [0, 255, 0]), "again.png")
    other_key = await _another_app(harness)
    resp = await harness.api.post(f"/api/store/S3?key={other_key}", data=plain(40, 30, [0, 0, 9]))
    theirs = (await resp.json())["handle"]
    guarded = await stored(harness, plain(40, 30, [9, 9, 9]), "g.png", app=harness.secure_app)
    forms = [
        "/zip/[{a},{b}]",
        "/animate/[{a},{b}]",
        "/collage=files:[{b}],width:80,height:40/{a}",
        "/watermark=file:{b}/{a}",
        "/flip/animate/[{a},{a},{b}]",
    ]
    for form in forms:
        for foreign in (theirs, guarded):
            resp = await harness.cdn.get(form.format(a=mine, b=foreign))
            assert resp.status == 404, (form, foreign, await resp.text())
            assert await code_of(resp) == "HANDLE_NOT_FOUND"
        resp = await harness.cdn.get(form.format(a=mine, b=again))
        assert resp.status == 200, (form, await resp.text())
    resp = await harness.api.post(f"/process/zip/store/[{mine},{theirs}]")
    assert resp.status == 404 and await code_of(resp) == "HANDLE_NOT_FOUND"
