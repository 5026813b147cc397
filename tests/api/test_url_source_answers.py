"""What an origin's answer does to a URL source's answer and kept copy (generated inputs,
seeds 5176-5178): a long last path part of the URL gives a bounded file name (it made a
``Content-Disposition`` past 8 KB that no client reads); a length declared past the
input limit is refused before the body is read (a slow origin held a fetch slot until
the read timeout); ``Cache-Control: no-store`` and ``Vary: *`` leave no kept copy; the
kept copies hold at most ``processing_url_sources_bytes`` together (seed 5179); a URL
with port 0 is the client's mistake (400), not an origin that failed (502); a validator
that cannot be sent back (a control character, bytes that are no UTF-8) is neither kept
nor sent (it made every later use of the URL a 500; seed 5175); a source URL of a
scheme that is not fetched is ``INVALID_URL``, not an unknown task (seed 5171)."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from email.message import Message
from urllib.parse import quote

import pytest
from aiohttp import web

from tests.api.harness import Harness
from tests.api.sites import served
from tests.api.test_transform import decoded, picture

PICTURE = picture(40, 30, ".png")
LIMIT = 20_000  # processing_max_input_bytes of the tests that need it


@dataclass
class Site:
    root: str = ""
    headers: dict[str, str] = field(default_factory=dict)  # sent with the picture
    asked: list[str | None] = field(default_factory=list)  # If-None-Match of each GET


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    found = Site()

    async def answer(request: web.Request) -> web.StreamResponse:
        found.asked.append(request.headers.get("If-None-Match"))
        if request.path.startswith("/declared/"):  # a length past the limit, sent slowly
            declared = int(request.path.rsplit("/", 1)[1])
            response = web.StreamResponse(headers={"Content-Length": str(declared)})
            response.content_type = "image/png"
            await response.prepare(request)
            await response.write(PICTURE[:100])
            await asyncio.sleep(20)
            return response
        if request.path == "/go":  # a redirect to ?to=
            return web.Response(status=302, headers={"Location": request.query["to"]})
        if request.path.startswith("/sized/"):  # /sized/<width>/<n>.png, its own ETag
            width = int(request.path.split("/")[2])
            tag = f'"{request.path}"'
            if request.headers.get("If-None-Match") == tag:
                return web.Response(status=304, headers={"ETag": tag})
            body = picture(width, 20, ".png", compression=0)
            return web.Response(body=body, content_type="image/png", headers={"ETag": tag})
        etag = found.headers.get("ETag")
        if etag is not None and request.headers.get("If-None-Match") == etag:
            return web.Response(status=304, headers=found.headers)
        return web.Response(body=PICTURE, content_type="image/png", headers=found.headers)

    async with served(answer, "/{tail:.*}") as root:
        found.root = root
        yield found


def long_name(rnd: random.Random) -> str:
    """A last path part of 300 to 6000 characters, some of them encoded, with or
    without an extension."""
    letters = "abcxyz-_~.é漢😀 %"
    stem = "".join(rnd.choice(letters) for _ in range(rnd.randint(300, 6000 // 3)))
    return quote(stem, safe="-_~.") + rnd.choice([".png", ".jpg", "", ".PNG"])


def filename_of(disposition: str) -> str:
    message = Message()
    message["content-disposition"] = disposition
    return str(message.get_filename())


async def test_a_long_last_part_of_a_url_gives_a_bounded_file_name(
    harness: Harness, site: Site
) -> None:
    rnd = random.Random(5176)
    key = harness.open_app.api_key
    for _ in range(6):
        name = long_name(rnd)
        url = f"{site.root}/dir/{name}"
        for path, extension in (
            (f"/{key}/{url}", None),
            (f"/{key}/resize=width:20/{url}", ".png"),
            (f"/{key}/output=format:webp/{url}?dl=true", ".webp"),
        ):
            resp = await harness.cdn.get(path)
            body = await resp.read()
            assert resp.status == 200, body[:300]
            shown = resp.headers["Content-Disposition"]
            assert len(shown) < 1024, len(shown)
            got = filename_of(shown)
            assert 0 < len(got.encode()) <= 200
            if extension:
                assert got.endswith(extension)
            elif name.endswith((".png", ".jpg")):
                assert got.endswith(name[-4:])
        resp = await harness.api.get(f"/process/{key}/resize=width:20/store/{url}")
        stored = await resp.json()
        assert resp.status == 200, stored
        assert len(stored["filename"].encode()) <= 200 and stored["filename"].endswith(".png")


@pytest.mark.settings(processing_max_input_bytes=LIMIT)
async def test_a_length_declared_past_the_limit_is_refused_before_the_body(
    harness: Harness, site: Site
) -> None:
    rnd = random.Random(5177)
    key = harness.open_app.api_key
    for declared in sorted({LIMIT + 1, *(rnd.randint(LIMIT + 2, 10**9) for _ in range(3))}):
        url = f"{site.root}/declared/{declared}"
        for path in (f"/{key}/resize=width:20/{url}", f"/{key}/{url}", f"/{key}/zip/[{url}]"):
            started = time.monotonic()
            resp = await harness.cdn.get(path)
            assert resp.status == 413, (path, await resp.text())
            assert (await resp.json())["error"]["code"] == "PAYLOAD_TOO_LARGE"
            assert time.monotonic() - started < 5, path  # the origin sends nothing for 20 s


@pytest.mark.parametrize(
    "headers",
    [
        {"Cache-Control": "no-store"},
        {"Cache-Control": "public, No-Store, max-age=0"},
        {"Cache-Control": "private,no-store"},
        {"Vary": "*"},
        {"Vary": "Accept, *"},
    ],
)
async def test_an_answer_the_origin_forbids_caching_leaves_no_kept_copy(
    harness: Harness, site: Site, headers: dict[str, str]
) -> None:
    key = harness.open_app.api_key
    rnd = random.Random(5178)
    site.headers = {"ETag": f'"v{rnd.randrange(10**6)}"', **headers}
    url = f"{site.root}/pic.png"
    for width in (20, 10, 20):
        resp = await harness.cdn.get(f"/{key}/resize=width:{width}/{url}")
        assert resp.status == 200 and decoded(await resp.read()).width == width
    assert site.asked == [None, None, None]  # nothing kept: never a conditional fetch
    kept = harness.settings.data_dir / "url-sources"
    assert not list(kept.glob("*.src")) and not list(kept.glob("*.json"))


async def test_a_copy_kept_then_forbidden_is_removed(harness: Harness, site: Site) -> None:
    key = harness.open_app.api_key
    site.headers = {"ETag": '"one"'}
    url = f"{site.root}/pic.png"
    await harness.cdn.get(f"/{key}/flip/{url}")
    kept = harness.settings.data_dir / "url-sources"
    assert len(list(kept.glob("*.src"))) == 1
    site.headers = {"ETag": '"two"', "Cache-Control": "no-store"}  # the origin changes its mind
    resp = await harness.cdn.get(f"/{key}/flip/{url}")
    assert resp.status == 200
    assert not list(kept.glob("*.src")) and site.asked == [None, '"one"']


BUDGET = 60_000  # processing_url_sources_bytes of the next test


@pytest.mark.settings(processing_url_sources_bytes=BUDGET)
async def test_the_kept_copies_hold_at_most_their_bytes(harness: Harness, site: Site) -> None:
    """512 copies of URLs of up to ``processing_max_input_bytes`` each (100 GB at 200 MB)
    were the only bound: the least recently used go once the copies pass the bytes."""
    rnd = random.Random(5179)
    key = harness.open_app.api_key
    kept = harness.settings.data_dir / "url-sources"
    urls = [f"{site.root}/sized/{rnd.randint(100, 700)}/{n}.png" for n in range(12)]
    for url in urls:
        resp = await harness.cdn.get(f"/{key}/resize=width:10/{url}")
        assert resp.status == 200, await resp.text()
        sizes = [path.stat().st_size for path in kept.glob("*.src")]
        assert sum(sizes) <= BUDGET, sizes
    assert len(list(kept.glob("*.src"))) == len(list(kept.glob("*.json")))
    site.asked.clear()
    await harness.cdn.get(f"/{key}/resize=width:10/{urls[-1]}")  # the last is still kept
    assert site.asked == [f'"{urls[-1].split(site.root, 1)[1]}"']


@pytest.mark.settings(processing_url_sources_bytes=0)
async def test_no_copy_is_kept_with_no_bytes_for_them(harness: Harness, site: Site) -> None:
    key = harness.open_app.api_key
    site.headers = {"ETag": '"v1"'}
    for _ in range(2):
        resp = await harness.cdn.get(f"/{key}/flip/{site.root}/pic.png")
        assert resp.status == 200
    assert site.asked == [None, None]


async def test_port_zero_is_an_invalid_url_not_an_upstream_error(
    harness: Harness, site: Site
) -> None:
    """``http://host:0/x`` answered ``502 UPSTREAM_ERROR`` (the connect failed): no origin
    listens there, the URL is wrong. An origin redirecting there is the origin's fault."""
    rnd = random.Random(5179)
    key = harness.open_app.api_key
    for _ in range(4):
        zeros = "0" * rnd.randint(1, 4)
        host = rnd.choice(["127.0.0.1", "localhost", "[::1]", "example.com"])
        url = f"{rnd.choice(['http', 'https'])}://{host}:{zeros}/{rnd.randrange(999)}.png"
        for client, path in (
            (harness.cdn, f"/{key}/resize=width:20/{url}"),
            (harness.cdn, f"/{key}/{url}"),
            (harness.api, f"/process/{key}/store/{url}"),
        ):
            resp = await client.get(path)
            assert resp.status == 400, (path, await resp.text())
            assert (await resp.json())["error"]["code"] == "INVALID_URL"
        resp = await harness.cdn.get(f"/{key}/flip/{site.root}/go?to={quote(url, safe='')}")
        assert resp.status == 502 and (await resp.json())["error"]["code"] == "UPSTREAM_ERROR"


@contextlib.asynccontextmanager
async def raw_site(extra: bytes) -> AsyncIterator[tuple[str, list[bytes]]]:
    """An origin answering the picture with ``extra`` header bytes, as no HTTP library
    would write them; yields its URL and the head of each request."""
    heads: list[bytes] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            heads.append(await reader.readuntil(b"\r\n\r\n"))
            head = f"HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: {len(PICTURE)}"
            writer.write(head.encode() + b"\r\nConnection: close\r\n" + extra + b"\r\n" + PICTURE)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/pic.png", heads
    finally:
        server.close()
        await server.wait_closed()


def validator_line(rnd: random.Random) -> tuple[bytes, bytes]:
    """A header naming a validator that holds a byte no header line may carry back: a
    control character (not tab) or DEL, or bytes that are no UTF-8. The header's name
    and its value."""
    bad = rnd.choice([bytes([rnd.choice([*range(0, 9), *range(11, 32), 127])]), b"\xff\xfe"])
    if rnd.random() < 0.5:
        value = b'"' + bad.join([b"v", b"1"][: rnd.randint(1, 2)]) + bad + b'"'
        return b"ETag", value
    return b"Last-Modified", b"Wed, 01 Jan 2025 00:00:00 GMT" + bad


async def test_a_validator_that_cannot_be_sent_back_is_not_kept(harness: Harness) -> None:
    rnd = random.Random(5175)
    key = harness.open_app.api_key
    for _ in range(8):
        name, value = validator_line(rnd)
        if b"\r" in value or b"\n" in value:  # would end the header line: another test
            continue
        async with raw_site(name + b": " + value + b"\r\n") as (url, heads):
            for path in (f"/{key}/resize=width:20/{url}", f"/{key}/{url}", f"/{key}/flip/{url}"):
                resp = await harness.cdn.get(path)
                assert resp.status == 200, (value, await resp.text())
            asked = [line for head in heads for line in head.lower().split(b"\r\n")]
            assert not [line for line in asked if line.startswith(b"if-")], (value, asked)


SCHEMES = ["ftp", "file", "gopher", "ws", "wss", "s3", "gs", "sftp", "ldap", "dict", "tftp"]


async def test_a_source_url_of_another_scheme_is_an_invalid_url(harness: Harness) -> None:
    """``/<KEY>/resize=width:20/ftp://host/a.png`` answered ``400 UNSUPPORTED_TASK``,
    "task 'ftp:' is not supported": the URL is what is wrong, as for ``src://``."""
    rnd = random.Random(5171)
    key = harness.open_app.api_key
    for _ in range(16):
        scheme = "".join(c.upper() if rnd.random() < 0.3 else c for c in rnd.choice(SCHEMES))
        url = f"{scheme}://{rnd.choice(['h', '127.0.0.1', 'example.com'])}/{rnd.randrange(99)}.png"
        url = rnd.choice([url, quote(url, safe=""), f"data:image/png;base64,{rnd.randrange(99)}"])
        tasks = rnd.choice(["", "resize=width:20/", "flip/output=format:webp/"])
        resp = await harness.cdn.get(f"/{key}/{tasks}{url}")
        body = await resp.json()
        assert resp.status == 400 and body["error"]["code"] == "INVALID_URL", (url, body)
