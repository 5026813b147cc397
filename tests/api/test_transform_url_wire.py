"""External sources as origins and SDKs really send them: a body compressed although
``identity`` was asked, a type that does not name the format (an S3 object served as
``application/octet-stream``), a list of URLs whose query strings split the request
line, and ``?dl=true`` (a client that leaves: tests/e2e/test_client_gone.py)."""

from __future__ import annotations

import gzip
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from urllib.parse import unquote

import pytest
import pyvips
from aiohttp import web
from aiohttp.test_utils import TestServer

from tests.api.harness import Harness
from tests.api.test_file_ops import basic
from tests.api.test_transform import get, picture

FORMATS = {".jpg": "image/jpeg", ".png": "image/png", ".gif": "image/gif", ".webp": "image/webp"}
LOADERS = {f: f"{t.split('/')[1]}load_buffer" for f, t in FORMATS.items()}


def frames(n: int, fmt: str) -> bytes:
    """An animation of ``n`` frames of distinct colours (a still for JPEG and PNG)."""
    tiles = [
        pyvips.Image.black(40, 30).new_from_image([20 * i, 90, 200 - 20 * i]) for i in range(n)
    ]
    strip = pyvips.Image.arrayjoin([t.cast("uchar") for t in tiles], across=1)
    if fmt in (".jpg", ".png"):
        return bytes(tiles[0].cast("uchar").write_to_buffer(fmt))
    strip = strip.copy()
    strip.set_type(pyvips.GValue.gint_type, "page-height", 30)
    return bytes(strip.write_to_buffer(fmt, **({"effort": 1} if fmt == ".gif" else {})))


@dataclass
class Origin:
    base: str = ""
    files: dict[str, tuple[bytes, dict[str, str]]] = field(default_factory=dict)
    queries: list[tuple[str, str]] = field(default_factory=list)

    def serve(self, name: str, body: bytes, **headers: str) -> str:
        self.files[name] = (body, headers)
        return f"{self.base}/{name}"


@pytest.fixture
async def origin() -> AsyncIterator[Origin]:
    site = Origin()

    async def answer(request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        site.queries.append((name, request.query_string))
        body, headers = site.files[name]
        # Set here, not by aiohttp: no Content-Type at all when none is given.
        response = web.Response(body=body, headers=headers)
        if "Content-Type" not in headers:
            response.headers.popall("Content-Type", None)
        return response

    app = web.Application()
    app.router.add_get("/{name}", answer)
    server = TestServer(app)
    await server.start_server()
    site.base = str(server.make_url("")).rstrip("/")
    yield site
    await server.close()


async def test_a_compressed_answer_is_read_as_the_file_it_compresses(
    harness: Harness, origin: Origin
) -> None:
    """Some origins gzip whatever is asked: the file is what the gzip holds (kept as sent,
    it was a broken image/png no decoder could open). A coding not read is the origin's
    failure, and an overwrite from it leaves the file as it was."""
    key, png = harness.open_app.api_key, picture(64, 48, ".png")
    url = origin.serve("g.png", gzip.compress(png), **{"Content-Encoding": "gzip"})
    resp = await harness.api.post(f"/api/store/S3?key={key}", data={"url": url})
    assert resp.status == 200, await resp.text()
    found = await resp.json()
    assert found["size"] == len(png) and found["type"] == "image/png"
    _, body = await get(harness, f"/{found['handle']}")
    assert body == png
    _, body = await get(harness, f"/{key}/resize=width:32/{url}")
    assert pyvips.Image.new_from_buffer(body, "").width == 32
    brotli = origin.serve("b.png", b"\x1b\x03\x00garbage", **{"Content-Encoding": "br"})
    resp = await harness.cdn.get(f"/{key}/flip/{brotli}")
    assert resp.status == 502 and (await resp.json())["error"]["code"] == "UPSTREAM_ERROR"
    resp = await harness.api.post(
        f"/api/file/{found['handle']}", data={"url": brotli}, headers=basic("app", "open-secret")
    )
    assert resp.status == 502
    _, body = await get(harness, f"/{found['handle']}")
    assert body == png


DECLARED = ["application/octet-stream", "binary/octet-stream", None, "text/plain", "image/jpg"]


async def test_the_result_keeps_the_format_and_frames_the_bytes_have(
    harness: Harness, origin: Origin
) -> None:
    """Without ``output=format``, a result is in its input's format, whatever type the
    origin (or the uploader: ``image/jpg``) gave it: a JPEG served as octet-stream came
    back as PNG, and a GIF or WebP as a still PNG."""
    key, rng = harness.open_app.api_key, random.Random(2611)
    for index in range(12):
        fmt, declared = rng.choice(list(FORMATS)), rng.choice(DECLARED)
        count = rng.randint(2, 4) if fmt in (".gif", ".webp") else 1
        data = frames(count, fmt)
        headers = {"Content-Type": declared} if declared else {}
        url = origin.serve(f"s{index}", data, **headers)
        resp, body = await get(harness, f"/{key}/resize=width:20/{url}")
        made = pyvips.Image.new_from_buffer(body, "", **({"n": -1} if count > 1 else {}))
        assert resp.headers["Content-Type"] == FORMATS[fmt], (fmt, declared)
        assert made.get("vips-loader") == LOADERS[fmt]
        assert (made.get("n-pages") if count > 1 else 1) == count, (fmt, declared)
    found = await harness.store(picture(80, 60, ".jpg"), filename="p.jpg", mimetype="image/jpg")
    assert found["type"] == "image/jpg"  # as the uploader named it
    resp, body = await get(harness, f"/resize=width:40/{found['handle']}")
    assert resp.headers["Content-Type"] == "image/jpeg"
    assert pyvips.Image.new_from_buffer(body, "").get("vips-loader") == "jpegload_buffer"


@pytest.mark.parametrize("zipped", [False, True])
async def test_a_list_of_urls_with_query_strings_as_filestack_js_sends_it(
    harness: Harness, origin: Origin, zipped: bool
) -> None:
    """filestack-js writes ``["https://h/a.png?v=1","https://h/b.png"]`` with ``?`` as
    it is: the request's query string then holds the list's rest. Each URL keeps its own
    query, and what follows the list is the request's (``dl``, ``key``)."""
    key, rng = harness.open_app.api_key, random.Random(7)
    for case in range(6):
        names = [f"l{case}-{i}" for i in range(rng.randint(2, 3))]
        queries = [rng.choice(["", f"v={case}", f"a=1&b={i}", "x=%5B1%5D"]) for i in names]
        urls = [origin.serve(n, frames(1, ".png"), **{"Content-Type": "image/png"}) for n in names]
        listed = ",".join(
            f'"{u}?{q}"' if q else f'"{u}"' for u, q in zip(urls, queries, strict=True)
        )
        tasks = "zip" if zipped else "animate=delay:50"
        own = rng.choice(["", "?dl=false", f"?key={key}"])
        resp = await harness.cdn.get(f"/{key}/{tasks}/[{listed}]{own}")
        assert resp.status == 200, await resp.text()
        body = await resp.read()
        asked = dict(origin.queries[-len(set(names)) :])
        assert [asked.get(n) for n in names] == [unquote(q) for q in queries]
        if not zipped:
            assert pyvips.Image.new_from_buffer(body, "", n=-1).get("n-pages") == len(names)
        else:
            assert body[:2] == b"PK"


async def test_dl_makes_a_url_result_an_attachment_named_after_the_url(
    harness: Harness, origin: Origin
) -> None:
    key = harness.open_app.api_key
    origin.serve("holiday photo.png", picture(40, 30, ".png"))
    url = f"{origin.base}/holiday%20photo.png"
    resp, _ = await get(harness, f"/{key}/output=format:webp/{url}?dl=true")
    shown = resp.headers["Content-Disposition"]
    assert shown.startswith("attachment;") and 'filename="holiday photo.webp"' in shown
    resp, _ = await get(harness, f"/{key}/output=format:webp/{url}")
    assert resp.headers["Content-Disposition"].startswith("inline;")
    assert origin.queries[-1] == ("holiday photo.png", "")  # dl was never the origin's
    for closing in ('"', "%22"):  # filestack-js quotes it: the quote closes the query
        resp, _ = await get(harness, f'/{key}/flip/"{url}?v=1&dl=true{closing}')
        assert resp.headers["Content-Disposition"].startswith("attachment;")
        assert origin.queries[-1] == ("holiday photo.png", "v=1")
