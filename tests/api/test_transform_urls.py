"""External sources: ``/<APIKEY>/<tasks>/<URL>`` and ``/<APIKEY>/[tasks/]store/<URL>``
against a local origin, through the URL guard, with the source kept by URL and
revalidated with its validators."""

from __future__ import annotations

import asyncio
import io
import random
import re
import time
import zipfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import pytest
import pyvips
from aiohttp import web
from aiohttp.test_utils import TestServer

from stowage.core import streams
from stowage.http import transform
from stowage.processing.results import Spooled
from tests.api.harness import Harness
from tests.api.test_transform import decoded, get, picture, stored
from tests.core.rawhttp import raw_origin
from tests.servers.ports import free_port


@dataclass
class Origin:
    url: str
    body: bytes
    etag: str = '"v1"'
    validators: bool = True
    asked: list[str | None] = field(default_factory=list)  # If-None-Match of each GET
    queries: list[str] = field(default_factory=list)  # the query string of each GET
    bodies: int = 0  # full answers sent

    def change(self, body: bytes, etag: str) -> None:
        self.body, self.etag = body, etag


@pytest.fixture
async def origin() -> AsyncIterator[Origin]:
    site = Origin("", picture(300, 150, ".png"))

    async def image(request: web.Request) -> web.Response:
        site.queries.append(request.query_string)
        if request.match_info["name"] == "slow.png":  # answers after the fetch's deadline
            await asyncio.sleep(5)
        if request.match_info["name"] == "empty":  # a 204: no file
            return web.Response(status=204)
        asked = request.headers.get("If-None-Match")
        site.asked.append(asked)
        if site.validators and asked == site.etag:
            return web.Response(status=304, headers={"ETag": site.etag})
        site.bodies += 1
        headers = {"ETag": site.etag} if site.validators else {}
        return web.Response(body=site.body, content_type="image/png", headers=headers)

    app = web.Application()
    app.router.add_get("/{name}", image)
    server = TestServer(app)
    await server.start_server()
    site.url = str(server.make_url("/pic.png"))
    yield site
    await server.close()


async def test_the_source_is_kept_by_url_and_revalidated(harness: Harness, origin: Origin) -> None:
    key = harness.open_app.api_key
    for width in (100, 60, 100):
        _, body = await get(harness, f"/{key}/resize=width:{width}/{origin.url}")
        assert decoded(body).width == width
    assert origin.asked == [None, '"v1"', '"v1"'] and origin.bodies == 1
    origin.change(picture(200, 200, ".png"), '"v2"')  # the origin's file changes
    _, body = await get(harness, f"/{key}/resize=width:50/{origin.url}")
    assert (decoded(body).width, decoded(body).height) == (50, 50)
    assert origin.bodies == 2
    _, body = await get(harness, f"/{key}/flip/{origin.url}")
    assert decoded(body).height == 200 and origin.bodies == 2


@pytest.mark.parametrize("seconds", [0, 1, 59, 3600, 31536000])
async def test_cache_expiry_sets_a_url_results_max_age_zero_included(
    harness: Harness, origin: Origin, seconds: int
) -> None:
    """``cache=expiry:0`` on a URL source answered ``max-age=3600``: 0 was taken as not
    given. A stored file's result already said ``max-age=0``."""
    key = harness.open_app.api_key
    for chain in (
        f"cache=expiry:{seconds}/flip",
        f"cache=e:{seconds}",
        f"flip/cache=expiry:{seconds}",
    ):
        resp, _ = await get(harness, f"/{key}/{chain}/{origin.url}")
        assert resp.headers["Cache-Control"] == f"public, max-age={seconds}", chain
    resp, _ = await get(harness, f"/{key}/flip/{origin.url}")
    assert resp.headers["Cache-Control"] == "public, max-age=3600"  # not given: an hour


async def test_an_origin_without_validators_is_fetched_every_time(
    harness: Harness, origin: Origin
) -> None:
    origin.validators = False
    key = harness.open_app.api_key
    for _ in range(2):
        await get(harness, f"/{key}/resize=width:10/{origin.url}")
    assert origin.asked == [None, None] and origin.bodies == 2


@pytest.mark.settings(processing_max_input_bytes=1000)
async def test_the_input_limit_holds_for_urls(harness: Harness, origin: Origin) -> None:
    resp = await harness.cdn.get(f"/{harness.open_app.api_key}/flip/{origin.url}")
    assert resp.status == 413


async def test_store_of_a_url_as_it_is_and_transformed(harness: Harness, origin: Origin) -> None:
    key = harness.open_app.api_key
    resp = await harness.api.get(f"/process/{key}/store/{origin.url}")
    assert resp.status == 200, await resp.text()
    plain = await resp.json()
    assert plain["size"] == len(origin.body) and plain["type"] == "image/png"
    _, body = await get(harness, f"/{plain['handle']}")
    assert body == origin.body
    resp = await harness.api.post(
        f"/process/{key}/resize=width:30/store=filename:small.png/{origin.url}"
    )
    assert resp.status == 200, await resp.text()
    small = await resp.json()
    _, body = await get(harness, f"/{small['handle']}")
    assert decoded(body).width == 30 and small["filename"] == "small.png"


@pytest.mark.parametrize(
    ("name", "tasks", "expected"),
    [
        ("photo.png", "output=format:webp", "photo.webp"),
        ("archive.tar.png", "resize=width:20", "archive.tar.png"),
        ("%C3%A9t%C3%A9.png", "output=f:jpg", "\u00e9t\u00e9.jpg"),
        ("noext", "flip", "noext.png"),
        (".png", "flip", "file.png"),
    ],
)
async def test_a_transformed_url_is_stored_under_its_own_name(
    harness: Harness, origin: Origin, name: str, tasks: str, expected: str
) -> None:
    """The source's name with the result's extension, as for a stored file's; it was
    ``file.<ext>`` whatever the URL."""
    key = harness.open_app.api_key
    url = origin.url.replace("/pic.png", f"/{name}")
    resp = await harness.api.get(f"/process/{key}/{tasks}/store/{url}")
    assert resp.status == 200, await resp.text()
    assert (await resp.json())["filename"] == expected


async def test_the_cdn_sends_a_url_store_to_the_process_address(
    harness: Harness, origin: Origin
) -> None:
    key = harness.open_app.api_key
    resp = await harness.cdn.post(f"/{key}/store/{origin.url}", allow_redirects=False)
    assert resp.status == 308 and "/process/" in resp.headers["Location"]
    assert origin.asked == []  # nothing fetched on the read-only origin


async def test_a_url_store_needs_the_policy_url(harness: Harness, origin: Origin) -> None:
    app = harness.secure_app
    elsewhere = harness.policy(app, call=["convert", "store"], url="https://elsewhere\\.example/.*")
    resp = await harness.api.get(f"/process/{app.api_key}/store/{origin.url}", params=elsewhere)
    assert resp.status == 403
    allowed = harness.policy(app, call=["convert", "store"], url="http://127\\.0\\.0\\.1:.*")
    resp = await harness.api.get(f"/process/{app.api_key}/store/{origin.url}", params=allowed)
    assert resp.status == 200, await resp.text()
    assert origin.bodies == 1


@pytest.mark.settings(fetch_allow_private=False)
async def test_loopback_urls_are_refused_when_private_fetches_are_off(
    harness: Harness, origin: Origin
) -> None:
    key = harness.open_app.api_key
    for path in (f"/{key}/flip/{origin.url}", f"/process/{key}/store/{origin.url}"):
        client = harness.api if path.startswith("/process") else harness.cdn
        resp = await client.get(path)
        assert resp.status == 403, path
        assert (await resp.json())["error"]["code"] == "URL_FORBIDDEN"
    assert origin.asked == []


async def test_kept_copies_are_bounded_and_leave_no_reads(
    harness: Harness, origin: Origin, monkeypatch: pytest.MonkeyPatch
) -> None:
    from stowage.processing import urlsources

    monkeypatch.setattr(urlsources, "MAX_ENTRIES", 2)
    key = harness.open_app.api_key
    for n in range(4):  # four URLs: four sources
        await get(harness, f"/{key}/flip/{origin.url.replace('pic.png', f'pic{n}.png')}")
    folder = harness.settings.data_dir / "url-sources"
    assert len(list(folder.glob("*.src"))) == 2
    assert not list(folder.glob("read-*"))  # every job's own link is removed after it


@pytest.mark.settings(fetch_read_timeout=0.5, fetch_total_timeout=1.0)
async def test_a_slow_origin_is_given_up_at_the_fetch_deadline(
    harness: Harness, origin: Origin
) -> None:
    slow = origin.url.replace("pic.png", "slow.png")
    started = time.monotonic()
    resp = await harness.cdn.get(f"/{harness.open_app.api_key}/flip/{slow}")
    assert resp.status == 504 and (await resp.json())["error"]["code"] == "UPSTREAM_TIMEOUT"
    assert time.monotonic() - started < 4


@pytest.mark.settings(fetch_read_timeout=0.5, fetch_total_timeout=120.0)
async def test_an_origin_silent_after_100_continue_is_given_up_at_the_read_timeout(
    harness: Harness,
) -> None:
    """An interim answer then nothing held the transformation until fetch_total_timeout."""
    async with raw_origin([(0.0, b"HTTP/1.1 100 Continue\r\n\r\n")]) as stalled:
        started = time.monotonic()
        resp = await harness.cdn.get(f"/{harness.open_app.api_key}/flip/{stalled.url('/a.png')}")
        assert resp.status == 504 and (await resp.json())["error"]["code"] == "UPSTREAM_TIMEOUT"
        assert time.monotonic() - started < 5


async def test_fallback_stands_in_for_a_url_that_fails(harness: Harness, origin: Origin) -> None:
    backup_bytes = picture(20, 10, ".png")
    stored = await harness.store(backup_bytes, filename="backup.png")
    key, backup = harness.open_app.api_key, stored["handle"]
    gone = f"http://127.0.0.1:{free_port()}/x.png"  # nothing listens there
    resp, body = await get(harness, f"/{key}/fallback=handle:{backup},cache:30/flip/{gone}")
    assert body == backup_bytes and "max-age=30" in resp.headers["Cache-Control"]
    origin.body = b"not an image"
    _, body = await get(harness, f"/{key}/fallback=handle:{backup}/flip/{origin.url}")
    assert body == backup_bytes
    resp = await harness.cdn.get(f"/{key}/flip/{origin.url}")
    assert resp.status in (415, 422)  # without fallback the failure answers


def _base(origin: Origin) -> str:
    return origin.url.rsplit("/", 1)[0]


async def test_a_policy_url_rule_holds_for_the_url_fetched(
    harness: Harness, origin: Origin
) -> None:
    """``pic.png/../other``, sent as is or percent-encoded (``..%2F`` too), is ``/other``:
    not covered."""
    app = harness.secure_app
    rule = harness.policy(
        app, call=["convert", "store"], url="http://127\\.0\\.0\\.1:[0-9]+/pic\\.png.*"
    )
    escape = f"{origin.url}/../other.png"
    slashed = f"{origin.url}/..%2Fother.png"  # an origin that decodes %2F reads /other.png
    sources = (escape, quote(escape, safe=""), quote(f"{origin.url}/%2e%2e/x", safe=""), slashed)
    for source in sources:
        for path in (
            f"/{app.api_key}/resize=width:20/{source}",
            f"/process/{app.api_key}/store/{source}",
        ):
            client = harness.api if path.startswith("/process") else harness.cdn
            resp = await client.get(path, params=rule)
            assert resp.status == 403, (path, await resp.text())
    assert origin.asked == []
    resp = await harness.cdn.get(f"/{app.api_key}/resize=width:20/{origin.url}", params=rule)
    assert resp.status == 200


async def test_the_query_of_a_url_sent_as_is_is_the_sources(
    harness: Harness, origin: Origin
) -> None:
    """As the SDKs build it; Stowage's own parameters stay here (never to the origin)."""
    key = harness.open_app.api_key
    own = f"key={key}&dl=false&cache=true"
    for query, sent in (("v=2&w=a-b", "v=2&w=a-b"), (f"v=3&{own}", "v=3"), (own, "")):
        resp = await harness.cdn.get(f"/{key}/resize=width:20/{origin.url}?{query}")
        assert resp.status == 200, await resp.text()
        assert origin.queries[-1] == sent
    encoded = quote(f"{origin.url}?v=4", safe="")
    resp = await harness.cdn.get(f"/{key}/resize=width:20/{encoded}?dl=true")
    assert resp.status == 200 and origin.queries[-1] == "v=4"
    app = harness.secure_app
    rule = harness.policy(app, call=["convert"])
    resp = await harness.cdn.get(f"/{app.api_key}/flip/{origin.url}?v=5", params=rule)
    assert resp.status == 200 and origin.queries[-1] == "v=5"  # no policy sent on


async def test_a_url_in_double_quotes_as_filestack_js_sends_it(
    harness: Harness, origin: Origin
) -> None:
    """``/<KEY>/<tasks>/"<URL>"`` (filestack-js quotes a source holding ``/``), the quotes
    as they are or as ``%22``; a URL with a query string has its closing quote after the
    query, which is the source's but for that quote and Stowage's own parameters."""
    key = harness.open_app.api_key
    for quoted in (f'"{origin.url}"', f"%22{origin.url}%22", f'"{quote(origin.url, safe="")}"'):
        resp = await harness.cdn.get(f"/{key}/resize=width:20/{quoted}")
        assert resp.status == 200, await resp.text()
        assert decoded(await resp.read()).width == 20 and origin.queries[-1] == ""
    for closing in ('"', "%22"):
        resp = await harness.cdn.get(f'/{key}/resize=width:30/"{origin.url}?v=6&dl=false{closing}')
        assert resp.status == 200, await resp.text()
        assert decoded(await resp.read()).width == 30 and origin.queries[-1] == "v=6"


# A bucket of 3 requests, refilled one per 1000 s.
@pytest.mark.settings(rate_limit_app=0.001, rate_limit_burst=3000, rate_limit_ip=0)
async def test_every_external_transformation_counts_against_the_app(
    harness: Harness, origin: Origin
) -> None:
    """Its result is not kept, so each request runs a job (and a store also fetches)."""
    key = harness.open_app.api_key
    for width in (20, 20):
        resp = await harness.cdn.get(f"/{key}/resize=width:{width}/{origin.url}")
        assert resp.status == 200
    resp = await harness.api.get(f"/process/{key}/store/{origin.url}")
    assert resp.status == 200
    for path in (f"/{key}/resize=width:20/{origin.url}", f"/{key}/cache=false/flip/{origin.url}"):
        refused = await harness.cdn.get(path)
        assert refused.status == 429 and "Retry-After" in refused.headers
    refused = await harness.api.get(f"/process/{key}/store/{origin.url}")
    assert refused.status == 429


async def test_an_answer_with_no_file_is_an_upstream_error(
    harness: Harness, origin: Origin
) -> None:
    key = harness.open_app.api_key
    empty = f"{_base(origin)}/empty"
    resp = await harness.api.get(f"/process/{key}/store/{empty}")
    assert resp.status == 502 and (await resp.json())["error"]["code"] == "UPSTREAM_ERROR"
    resp = await harness.cdn.get(f"/{key}/flip/{empty}")
    assert resp.status == 502


async def test_a_list_of_urls_is_read_as_a_list_of_handles(
    harness: Harness, origin: Origin
) -> None:
    """``/<KEY>/animate/["<URL>","<URL>"]`` as filestack-js writes a list of URLs (each
    quoted), and unquoted as filestack-swift does: one frame a listed URL, a URL listed
    twice fetched once; a Filestack CDN link in a list is its handle."""
    key, base = harness.open_app.api_key, origin.url.rsplit("/", 1)[0]
    first, second = f"{base}/one.png", f"{base}/two.png"
    for listed in (f'["{first}","{second}","{first}"]', f"[{first},{second},{first}]"):
        before = origin.bodies
        resp = await harness.cdn.get(f"/{key}/animate=delay:100,width:60/{listed}")
        assert resp.status == 200, await resp.text()
        image = pyvips.Image.new_from_buffer(await resp.read(), "", n=-1)
        assert resp.headers["Content-Type"] == "image/gif"
        assert (image.get("n-pages"), image.width) == (3, 60)
        assert origin.bodies - before <= 2  # fetched once each (kept copies revalidated)
    handle = await stored(harness, picture(80, 40, ".png"), "h.png")
    mixed = f'["https://cdn.filestackcontent.com/{handle}","{handle}"]'
    resp = await harness.cdn.get(f"/{key}/animate/{mixed}")
    assert (
        resp.status == 200
        and pyvips.Image.new_from_buffer(await resp.read(), "", n=-1).get("n-pages") == 2
    )


async def test_a_list_of_urls_is_authorised_and_limited_as_a_list_of_handles(
    harness: Harness, origin: Origin
) -> None:
    app, base = harness.secure_app, origin.url.rsplit("/", 1)[0]
    listed = f'["{base}/ok/1.png","{base}/other/2.png"]'
    only_ok = harness.policy(app, call=["convert"], url=f"^{re.escape(base)}/ok/.*")
    resp = await harness.cdn.get(f"/{app.api_key}/animate/{listed}", params=only_ok)
    assert resp.status == 403, await resp.text()
    assert origin.bodies == 0  # refused before anything was fetched
    key = harness.open_app.api_key
    for refused, code in (
        (f"flip/{listed}", "INVALID_PARAMETER"),
        (f"urlscreenshot/{listed}", "INVALID_PARAMETER"),
        (f'animate/["{base}/a.png","{base}/b.png"]', "ok"),
        (f'animate/["{base}/a.png",{"A" * 20}]', "INVALID_PARAMETER"),
    ):
        resp = await harness.cdn.get(f"/{key}/{refused}")
        if code == "ok":
            assert resp.status == 200, await resp.text()
        else:
            assert resp.status == 400 and (await resp.json())["error"]["code"] == code, refused


async def test_a_list_of_urls_is_zipped_as_fetched(harness: Harness, origin: Origin) -> None:
    """``/<KEY>/zip/["u1","u2"]`` (filestack-js) and unquoted (filestack-swift), and one
    URL: an entry per listed URL, named after its last part, holding what the origin
    sent; a URL the policy does not allow refuses the whole before any fetch."""
    key, base = harness.open_app.api_key, origin.url.rsplit("/", 1)[0]
    one, two = f"{base}/one.png", f"{base}/two%20b.png"
    for source in (f'["{one}","{two}","{one}"]', f"[{one},{two},{one}]"):
        resp = await harness.cdn.get(f"/{key}/zip/{source}")
        assert resp.status == 200, await resp.text()
        assert resp.headers["Content-Type"] == "application/zip"
        with zipfile.ZipFile(io.BytesIO(await resp.read())) as archive:
            assert archive.namelist() == ["one.png", "two b.png", "one (2).png"]
            assert all(archive.read(name) == origin.body for name in archive.namelist())
    resp = await harness.cdn.get(f"/{key}/zip/{one}")
    with zipfile.ZipFile(io.BytesIO(await resp.read())) as archive:
        assert archive.namelist() == ["one.png"]
    app, fetched = harness.secure_app, origin.bodies
    only_one = harness.policy(app, call=["convert"], url=f"^{re.escape(one)}$")
    resp = await harness.cdn.get(f'/{app.api_key}/zip/["{one}","{two}"]', params=only_one)
    assert resp.status == 403 and origin.bodies == fetched


@pytest.mark.settings(processing_max_sources=2)
async def test_a_list_of_urls_past_the_count_is_refused_before_a_fetch(
    harness: Harness, origin: Origin
) -> None:
    key, base = harness.open_app.api_key, origin.url.rsplit("/", 1)[0]
    for task in ("animate", "zip"):
        resp = await harness.cdn.get(
            f'/{key}/{task}/["{base}/1.png","{base}/2.png","{base}/3.png"]'
        )
        assert resp.status == 400, await resp.text()
    assert origin.bodies == 0


async def test_a_result_is_closed_by_its_handler_when_the_client_leaves(
    harness: Harness, origin: Origin, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A URL's result is spooled and sent from the spool file: when the client goes away
    mid-body, the file is closed before the sending returns (``aclosing``), not by the
    collector later (an open file per abandoned request until then)."""
    bands = [pyvips.Image.gaussnoise(2400, 2400, seed=seed).cast("uchar") for seed in (5, 6, 7)]
    origin.change(bands[0].bandjoin(bands[1:]).jpegsave_buffer(Q=100), '"noise"')
    closed: list[str] = []
    closed_when_sent: list[list[str]] = []
    send = transform._send_spooled

    async def watched(path: str, size: int = 256 * 1024) -> AsyncIterator[bytes]:
        # Read without awaiting: the handler is then only ever suspended in its write,
        # where the client's leaving reaches it (file_chunks' own reads in a thread may
        # take the cancellation themselves, and then close the file on their way out).
        try:
            with open(path, "rb") as file:
                while chunk := file.read(size):
                    yield chunk
        finally:
            closed.append(str(path))

    async def sending(request: web.Request, result: Spooled, *rest: Any) -> web.StreamResponse:
        try:
            return await send(request, result, *rest)
        finally:
            closed_when_sent.append([p for p in closed if p == str(result.path)])

    monkeypatch.setattr(streams, "file_chunks", watched)
    monkeypatch.setattr(transform, "_send_spooled", sending)
    key = harness.open_app.api_key
    resp = await harness.cdn.get(f"/{key}/quality=value:100/{origin.url}")  # about 17 MB
    assert resp.status == 200 and int(resp.headers["Content-Length"]) > 12 * 2**20
    await resp.content.read(2**16)
    resp.close()  # the loopback's buffers hold a few MiB: the handler is mid-body
    for _ in range(200):
        if closed_when_sent:
            break
        await asyncio.sleep(0.05)
    assert len(closed_when_sent) == 1 and len(closed_when_sent[0]) == 1, closed_when_sent


@pytest.mark.parametrize("quote", ["", '"'])
@pytest.mark.parametrize("spelling", ["[::1]", "%5B::1%5D", "%5b%3A%3A1%5d"])
async def test_an_ipv6_literal_source_is_read_however_its_brackets_come(
    harness: Harness, spelling: str, quote: str
) -> None:
    """``http://%5B::1%5D:P/pic.png`` (the brackets as HTTP clients encode them, and as
    the CDN's own redirect to the process address wrote them) was 400 INVALID_URL; in
    double quotes, as filestack-js writes a URL (python-requests then encodes the
    brackets), it still was."""

    async def image(_: web.Request) -> web.Response:
        return web.Response(body=picture(30, 20, ".png"), content_type="image/png")

    app = web.Application()
    app.router.add_get("/pic.png", image)
    server = TestServer(app, host="::1")
    await server.start_server()
    try:
        url = f"{quote}http://{spelling}:{server.port}/pic.png{quote}"
        key = harness.open_app.api_key
        resp = await harness.cdn.get(f"/{key}/resize=w:15/{url}")
        assert resp.status == 200, await resp.text()
        assert decoded(await resp.read()).width == 15
        moved = await harness.cdn.get(f"/{key}/store/{url}", allow_redirects=False)
        assert moved.status == 307, await moved.text()
        location = moved.headers["Location"]  # the process address, on the API origin
        kept = await harness.api.get(location[location.index("/process/") :])
        assert kept.status == 200, (location, await kept.text())
        assert (await kept.json())["size"] > 0
    finally:
        await server.close()


async def test_a_hosted_link_with_a_key_or_tasks_is_read_as_the_file(harness: Harness) -> None:
    """``https://cdn.filestackcontent.com/<APIKEY>/<HANDLE>`` (filestack-js's Filelink) and
    links with tasks were fetched from the hosted service: 502 here. Now the file, its
    link's tasks first (seeded sizes)."""
    rng = random.Random(2950)
    key = harness.open_app.api_key
    for _ in range(4):
        width, height = rng.randint(40, 200), rng.randint(40, 200)
        handle = await stored(harness, picture(width, height, ".png"), "h.png")
        box = rng.randint(10, 30)
        for link in (
            f"https://cdn.filestackcontent.com/{key}/{handle}",
            f"https://cdn.filestackcontent.com/api/file/{handle}",
            f"https://cdn.filestackcontent.com/{key}/cache=expiry:max/{handle}",
        ):
            resp = await harness.cdn.get(f"/{key}/resize=width:{box}/{link}")
            assert resp.status == 200, (link, await resp.text())
            assert pyvips.Image.new_from_buffer(await resp.read(), "").width == box
        # the link's tasks run first: a crop of the top-left quarter, then the URL's resize
        cropped = f"crop=dim:[0,0,{width // 2},{height // 2}]"
        link = f"https://cdn.filestackcontent.com/{key}/{cropped}/{handle}"
        resp = await harness.cdn.get(f"/{key}/resize=height:{box}/{link}")
        assert resp.status == 200, await resp.text()
        made = pyvips.Image.new_from_buffer(await resp.read(), "")
        expected = max(1, int((width // 2) * box / (height // 2) + 0.5))
        assert made.height == box and abs(made.width - expected) <= 1, (made.width, expected)


@pytest.mark.parametrize("seed", range(2))
async def test_auto_image_of_a_url_says_vary_whatever_the_format(
    harness: Harness, origin: Origin, seed: int
) -> None:
    """A client taking neither AVIF nor WebP got the URL's PNG with no ``Vary: Accept``
    (a shared cache then kept it for every browser); one taking WebP got Vary. Random
    Accept headers and chains: every answer of an ``auto_image`` chain says Vary."""
    import random

    rng = random.Random(seed)
    key = harness.open_app.api_key
    accepts = ["*/*", "", "text/html", "image/png,*/*", "image/webp,*/*", "image/avif,*/*"]
    for _ in range(6):
        chain = rng.choice(["auto_image", "auto_image/flip", "resize=width:40/auto_image"])
        accept = rng.choice(accepts)
        resp, _ = await get(harness, f"/{key}/{chain}/{origin.url}", headers={"Accept": accept})
        assert "Accept" in resp.headers.get("Vary", ""), (chain, accept)


SOURCES_BYTES = 30_000


def _noise_png(rng: random.Random) -> bytes:
    """A one-band PNG of noise (it does not compress), 3.6 to 22.5 kB."""
    side = rng.randrange(60, 150)
    return bytes(
        pyvips.Image.gaussnoise(side, side, seed=rng.randrange(999)).cast("uchar").pngsave_buffer()
    )


@pytest.mark.settings(processing_max_sources_bytes=SOURCES_BYTES)
@pytest.mark.parametrize("seed", range(5))
async def test_a_url_sources_bytes_count_with_the_files_its_tasks_name(
    harness: Harness, origin: Origin, seed: int
) -> None:
    """``/<KEY>/watermark=file:B/<URL>`` read the URL's file and B's, 9,816 bytes in all,
    under a limit of 5,000: only the stored files' bytes were summed. The URL's (or a
    list's) bytes and the named files' together are held to the limit."""
    rng = random.Random(seed)
    key, base = harness.open_app.api_key, origin.url.rsplit("/", 1)[0]
    for _ in range(4):
        source, mark = _noise_png(rng), _noise_png(rng)
        origin.change(source, f'"{rng.random()}"')
        handle = await stored(harness, mark, name="mark.png")
        listed = rng.random() < 0.5
        url = f'animate/["{base}/a.png","{base}/b.png"]' if listed else origin.url
        total = len(source) * (2 if listed else 1) + len(mark)
        resp = await harness.cdn.get(f"/{key}/watermark=file:{handle}/{url}")
        assert resp.status == (413 if total > SOURCES_BYTES else 200), (total, await resp.text())


@pytest.mark.parametrize("seed", range(3))
async def test_a_quoted_urls_closing_quote_never_reaches_the_origin(
    harness: Harness, origin: Origin, seed: int
) -> None:
    """``/<KEY>/flip/"http://o/img?m=a"&dl=true`` asked the origin for ``m=a%22``: the
    quote closed the URL only at the very end of the query. Random origin queries, quote
    spellings and Stowage parameters after the quote (or none): the origin gets its own
    query, and Stowage reads its own (``dl``)."""
    rng = random.Random(seed)
    key = harness.open_app.api_key
    for _ in range(5):
        own = [f"v{i}={rng.randrange(99)}" for i in range(rng.randrange(1, 3))]
        inside = "&".join(own)
        quote_mark = rng.choice(['"', "%22"])
        after = rng.choice(["", "&dl=true", "&cache=false", "&dl=true&cache=false"])
        task = rng.choice(["flip", "resize=width:30", ""])
        path = "/".join(p for p in (key, task) if p)
        url = f"/{path}/{quote_mark}{origin.url}?{inside}{quote_mark}{after}"
        resp = await harness.cdn.get(url)
        assert resp.status == 200, (url, await resp.text())
        assert origin.queries[-1] == inside, url
        attached = resp.headers.get("Content-Disposition", "").startswith("attachment")
        assert attached == ("dl=true" in after), url
