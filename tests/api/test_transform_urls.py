"""External sources: ``/<APIKEY>/<tasks>/<URL>`` and ``/<APIKEY>/[tasks/]store/<URL>``
against a local origin, through the URL guard, with the source kept by URL and
revalidated with its validators."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from tests.api.harness import Harness
from tests.api.test_transform import decoded, get, picture
from tests.servers.ports import free_port


@dataclass
class Origin:
    url: str
    body: bytes
    etag: str = '"v1"'
    validators: bool = True
    asked: list[str | None] = field(default_factory=list)  # If-None-Match of each GET
    bodies: int = 0  # full answers sent

    def change(self, body: bytes, etag: str) -> None:
        self.body, self.etag = body, etag


@pytest.fixture
async def origin() -> AsyncIterator[Origin]:
    site = Origin("", picture(300, 150, ".png"))

    async def image(request: web.Request) -> web.Response:
        if request.match_info["name"] == "slow.png":  # answers after the fetch's deadline
            await asyncio.sleep(5)
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
