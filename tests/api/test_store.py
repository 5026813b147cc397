"""Store (spec 4.2): every body form and query parameter."""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import random
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from stowage.assembly import assemble
from stowage.config import Settings
from stowage.http.app import api_app
from stowage.registry.base import App
from tests.api.harness import Harness
from tests.core.rawhttp import raw_origin
from tests.core.test_fetch import ipv4_embeddings

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


@pytest.fixture
async def source_server() -> AsyncIterator[TestServer]:
    async def file(request: web.Request) -> web.Response:
        return web.Response(body=b"fetched bytes", content_type="application/pdf")

    async def redirect(request: web.Request) -> web.Response:
        raise web.HTTPFound("/files/report.pdf")

    async def missing(request: web.Request) -> web.Response:
        raise web.HTTPNotFound()

    app = web.Application()
    app.router.add_get("/files/report.pdf", file)
    app.router.add_get("/go", redirect)
    app.router.add_get("/missing", missing)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    yield server
    await server.close()


async def test_raw_body_store_returns_store_result(harness: Harness) -> None:
    result = await harness.store(b"hello world", filename="greeting.txt")
    assert set(result) >= {"url", "size", "type", "filename", "key", "container"}
    assert result["size"] == 11
    assert result["filename"] == "greeting.txt"
    assert result["type"] == "text/plain"
    handle = result["url"].rsplit("/", 1)[-1]
    assert len(handle) == 20
    assert result["url"] == f"{harness.settings.cdn_url()}/{handle}"
    # default key: <unique id>_<filename>
    unique, _, name = result["key"].partition("_")
    assert name == "greeting.txt" and len(unique) == 20
    assert harness.object_path(harness.open_app, result["key"]).read_bytes() == b"hello world"


async def test_raw_body_of_unknown_type_is_text_plain(harness: Harness) -> None:
    result = await harness.store(b"\x01\x02 some bytes")
    assert result["type"] == "text/plain"


async def test_raw_body_type_from_content_type_header(harness: Harness) -> None:
    resp = await harness.api.post(
        "/api/store/S3",
        params={"key": harness.open_app.api_key},
        data=b"{}",
        headers={"Content-Type": "application/json"},
    )
    assert (await resp.json())["type"] == "application/json"


async def test_type_detected_from_content_before_name(harness: Harness) -> None:
    result = await harness.store(PNG, filename="picture.jpg")
    assert result["type"] == "image/png"
    result = await harness.store(b"plain words", filename="notes.csv")
    assert result["type"] == "text/csv"


async def test_multipart_file_upload(harness: Harness) -> None:
    form = aiohttp.FormData()
    form.add_field("fileUpload", PNG, filename="cat.png", content_type="application/octet-stream")
    resp = await harness.api.post(
        "/api/store/S3", params={"key": harness.open_app.api_key}, data=form
    )
    result = await resp.json()
    assert resp.status == 200, result
    assert result["filename"] == "cat.png"
    assert result["type"] == "image/png"
    assert result["size"] == len(PNG)


async def test_multipart_without_file_part_is_refused(harness: Harness) -> None:
    form = aiohttp.FormData()
    form.add_field("other", "x")
    form.add_field("another", b"y", filename="y.bin")
    resp = await harness.api.post(
        "/api/store/S3", params={"key": harness.open_app.api_key}, data=form
    )
    assert resp.status == 400
    assert (await resp.json())["error"]["code"] == "MISSING_FILE"


async def test_multipart_with_two_file_parts_is_refused_and_stores_nothing(
    harness: Harness,
) -> None:
    form = aiohttp.FormData()
    form.add_field("fileUpload", b"one", filename="1.txt")
    form.add_field("fileUpload", b"two", filename="2.txt")
    resp = await harness.api.post(
        "/api/store/S3", params={"key": harness.open_app.api_key}, data=form
    )
    assert resp.status == 400
    assert await harness.service.registry.list_files(harness.open_app.api_key) == []
    root = harness.settings.data_dir / "storage" / harness.open_app.api_key
    assert [p for p in root.rglob("*") if p.is_file()] == []


async def test_store_from_url(harness: Harness, source_server: TestServer) -> None:
    url = str(source_server.make_url("/go"))
    resp = await harness.api.post(
        "/api/store/S3", params={"key": harness.open_app.api_key}, data={"url": url}
    )
    result = await resp.json()
    assert resp.status == 200, result
    assert result["filename"] == "report.pdf"
    assert result["type"] == "application/pdf"
    assert result["size"] == len(b"fetched bytes")
    meta = await harness.api.get(
        f"/api/file/{result['handle']}/metadata", params={"source_url": "true"}
    )
    assert (await meta.json())["source_url"] == url


@pytest.mark.parametrize("body", [None, b""], ids=["no body", "empty body"])
async def test_store_from_a_url_in_the_query(
    harness: Harness, source_server: TestServer, body: bytes | None
) -> None:
    """``POST /api/store/S3?key=K&url=U`` with no body stored an empty file: the url is
    read as the form's; beside a body it is a 400, and nothing is stored."""
    url = str(source_server.make_url("/go"))
    key = harness.open_app.api_key
    resp = await harness.api.post("/api/store/S3", params={"key": key, "url": url}, data=body)
    result = await resp.json()
    assert resp.status == 200, result
    assert result["size"] == len(b"fetched bytes") and result["type"] == "application/pdf"
    count = len(await harness.service.registry.list_files(key))
    both = await harness.api.post("/api/store/S3", params={"key": key, "url": url}, data=b"x")
    assert both.status == 400
    assert (await both.json())["error"]["code"] == "INVALID_PARAMETER"
    assert len(await harness.service.registry.list_files(key)) == count


async def test_store_from_url_in_multipart_field(
    harness: Harness, source_server: TestServer
) -> None:
    form = aiohttp.FormData()
    form.add_field("url", str(source_server.make_url("/files/report.pdf")))
    resp = await harness.api.post(
        "/api/store/S3", params={"key": harness.open_app.api_key}, data=form
    )
    assert resp.status == 200
    assert (await resp.json())["size"] == len(b"fetched bytes")


async def test_store_from_failing_url_is_502(harness: Harness, source_server: TestServer) -> None:
    resp = await harness.api.post(
        "/api/store/S3",
        params={"key": harness.open_app.api_key},
        data={"url": str(source_server.make_url("/missing"))},
    )
    assert resp.status == 502
    assert (await resp.json())["error"]["code"] == "UPSTREAM_ERROR"


@pytest.mark.settings(fetch_allow_private=False)
async def test_store_from_loopback_url_refused_by_default(
    harness: Harness, source_server: TestServer
) -> None:
    for url in (str(source_server.make_url("/files/report.pdf")), "http://169.254.169.254/x"):
        resp = await harness.api.post(
            "/api/store/S3", params={"key": harness.open_app.api_key}, data={"url": url}
        )
        assert resp.status == 403, url
        assert (await resp.json())["error"]["code"] == "URL_FORBIDDEN"
    assert await harness.service.registry.list_files(harness.open_app.api_key) == []


@pytest.mark.settings(fetch_read_timeout=0.5, fetch_total_timeout=120.0)
@pytest.mark.parametrize(
    "interim",
    [b"HTTP/1.1 100 Continue\r\n\r\n", b"HTTP/1.1 150 Odd\r\nX-A: 1\r\n\r\n"],
    ids=["100", "150"],
)
async def test_store_from_an_origin_silent_after_an_interim_answer_is_504(
    harness: Harness, interim: bytes
) -> None:
    """``100 Continue`` then nothing held the store (and its fetch slot) until
    ``fetch_total_timeout``: it is a 504 once the origin was silent ``fetch_read_timeout``."""
    key = harness.open_app.api_key
    async with raw_origin([(0.0, interim)]) as origin:
        started = time.monotonic()
        resp = await harness.api.post("/api/store/S3", params={"key": key, "url": origin.url()})
        took = time.monotonic() - started
        assert resp.status == 504, await resp.text()
        assert (await resp.json())["error"]["code"] == "UPSTREAM_TIMEOUT"
        assert 0.45 <= took < 5, took
    assert await harness.service.registry.list_files(key) == []


@pytest.mark.settings(fetch_allow_private=False)
async def test_store_from_any_ipv6_spelling_of_loopback_is_refused(harness: Harness) -> None:
    """``http://[::ffff:0:7f00:1]:PORT/`` (127.0.0.1, IPv4-translated) was connected to."""
    async with raw_origin([(0.0, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi")]) as origin:
        loopback = int(ipaddress.IPv4Address("127.0.0.1"))
        for name, ip in ipv4_embeddings(loopback, random.Random(1).getrandbits(32)).items():
            url = f"http://[{ip}]:{origin.port}/file"
            resp = await harness.api.post(
                "/api/store/S3", params={"key": harness.open_app.api_key}, data={"url": url}
            )
            assert resp.status == 403, (name, url, resp.status)
            assert (await resp.json())["error"]["code"] == "URL_FORBIDDEN"
        assert origin.requests == 0


@pytest.mark.parametrize("location", ["ftp://example.com/x.png", "javascript:alert(1)", "", None])
async def test_store_from_an_origin_redirecting_nowhere_fetchable_is_502(
    harness: Harness, location: str | None
) -> None:
    """The origin's redirect is at fault, not the client's url: 502, not 400 INVALID_URL
    nor "too many redirects"."""
    header = b"" if location is None else b"Location: " + location.encode() + b"\r\n"
    answer = b"HTTP/1.1 302 Found\r\n" + header + b"Content-Length: 0\r\n\r\n"
    async with raw_origin([(0.0, answer)]) as origin:
        resp = await harness.api.post(
            "/api/store/S3", params={"key": harness.open_app.api_key}, data={"url": origin.url()}
        )
    error = (await resp.json())["error"]
    assert resp.status == 502 and error["code"] == "UPSTREAM_ERROR", error
    assert "redirect" in error["message"] or "Location" in error["message"]
    assert "too many" not in error["message"]


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com/x", "gopher://x/"])
async def test_store_from_non_http_url_refused(harness: Harness, url: str) -> None:
    resp = await harness.api.post(
        "/api/store/S3", params={"key": harness.open_app.api_key}, data={"url": url}
    )
    assert resp.status == 400
    assert (await resp.json())["error"]["code"] == "INVALID_URL"


async def test_filename_and_mimetype_parameters(harness: Harness) -> None:
    result = await harness.store(b"abc", filename="report.bin", mimetype="application/x-custom")
    assert result["filename"] == "report.bin"
    assert result["type"] == "application/x-custom"


async def test_path_is_the_key_without_leading_slash(harness: Harness) -> None:
    result = await harness.store(b"abc", path="/docs/2026/report.txt")
    assert result["key"] == "docs/2026/report.txt"
    assert harness.object_path(harness.open_app, "docs/2026/report.txt").read_bytes() == b"abc"


async def test_path_ending_in_slash_is_a_folder(harness: Harness) -> None:
    result = await harness.store(b"abc", path="/docs/", filename="a.txt")
    folder, _, name = result["key"].partition("/")
    assert folder == "docs"
    assert name.endswith("_a.txt") and len(name) == len("_a.txt") + 20


async def test_path_already_used_by_another_handle_is_409(harness: Harness) -> None:
    await harness.store(b"first", path="same.txt")
    params = {"key": harness.open_app.api_key, "path": "same.txt"}
    resp = await harness.api.post("/api/store/S3", params=params, data=b"second")
    assert resp.status == 409
    assert (await resp.json())["error"]["code"] == "KEY_IN_USE"
    assert harness.object_path(harness.open_app, "same.txt").read_bytes() == b"first"


@pytest.mark.parametrize("path", ["../escape.txt", "a/../../x", "a\\..\\x", "a/\u202etxt.exe"])
async def test_traversal_paths_refused(harness: Harness, path: str) -> None:
    params = {"key": harness.open_app.api_key, "path": path}
    resp = await harness.api.post("/api/store/S3", params=params, data=b"x")
    assert resp.status == 400
    assert (await resp.json())["error"]["code"] == "INVALID_PATH"


async def test_container_parameter(harness: Harness) -> None:
    result = await harness.store(b"abc", container="photos")
    assert result["container"] == "photos"
    assert harness.object_path(harness.open_app, result["key"], "photos").read_bytes() == b"abc"
    params = {"key": harness.open_app.api_key, "container": "../etc"}
    resp = await harness.api.post("/api/store/S3", params=params, data=b"x")
    assert resp.status == 400


async def test_access_parameter(harness: Harness) -> None:
    result = await harness.store(b"abc", access="public")
    assert result["size"] == 3
    params = {"key": harness.open_app.api_key, "access": "world"}
    resp = await harness.api.post("/api/store/S3", params=params, data=b"x")
    assert resp.status == 400
    assert (await resp.json())["error"]["code"] == "INVALID_PARAMETER"


async def test_base64decode(harness: Harness) -> None:
    payload = bytes(range(256)) * 3
    result = await harness.store(base64.b64encode(payload), base64decode="true")
    assert result["size"] == len(payload)
    assert harness.object_path(harness.open_app, result["key"]).read_bytes() == payload


async def test_invalid_base64_stores_nothing(harness: Harness) -> None:
    params = {"key": harness.open_app.api_key, "base64decode": "true"}
    resp = await harness.api.post("/api/store/S3", params=params, data=b"not*base64!")
    assert resp.status == 400
    assert (await resp.json())["error"]["code"] == "INVALID_BASE64"
    assert await harness.service.registry.list_files(harness.open_app.api_key) == []


async def test_key_is_required_and_must_exist(harness: Harness) -> None:
    resp = await harness.api.post("/api/store/S3", data=b"x")
    assert resp.status == 401
    resp = await harness.api.post("/api/store/S3", params={"key": "nope"}, data=b"x")
    assert resp.status == 400
    assert (await resp.json())["error"]["code"] == "UNKNOWN_API_KEY"


@pytest.mark.parametrize("provider", ["gcs", "azure", "rackspace", "dropbox"])
async def test_unconfigured_providers_are_not_enabled(harness: Harness, provider: str) -> None:
    resp = await harness.api.post(
        f"/api/store/{provider}", params={"key": harness.open_app.api_key}, data=b"x"
    )
    assert resp.status == 403
    assert (await resp.json())["error"]["code"] == "PROVIDER_NOT_ENABLED"


async def test_unknown_provider_is_400(harness: Harness) -> None:
    resp = await harness.api.post(
        "/api/store/ftp", params={"key": harness.open_app.api_key}, data=b"x"
    )
    assert resp.status == 400


async def test_secure_app_needs_store_policy(harness: Harness) -> None:
    app = harness.secure_app
    resp = await harness.api.post("/api/store/S3", params={"key": app.api_key}, data=b"x")
    assert resp.status == 401
    params = {"key": app.api_key, **harness.policy(app, call=["read"])}
    resp = await harness.api.post("/api/store/S3", params=params, data=b"x")
    assert resp.status == 403
    assert (await resp.json())["error"]["code"] == "POLICY_DENIED"
    assert (await harness.store(b"ok", app=app))["size"] == 2


async def test_policy_path_and_container_restrictions(harness: Harness) -> None:
    app = harness.secure_app
    policy = harness.policy(app, call=["store"], path="uploads/.*", container="box")
    base = {"key": app.api_key, **policy}
    ok = await harness.api.post(
        "/api/store/S3", params={**base, "path": "uploads/a.txt", "container": "box"}, data=b"x"
    )
    assert ok.status == 200
    for extra in (
        {"path": "other/uploads/a.txt", "container": "box"},
        {"path": "uploads/a.txt", "container": "boxes"},
    ):
        resp = await harness.api.post("/api/store/S3", params={**base, **extra}, data=b"x")
        assert resp.status == 403, extra


async def test_policy_max_and_min_size(harness: Harness) -> None:
    app = harness.secure_app
    params = {"key": app.api_key, **harness.policy(app, call=["store"], maxSize=10, minSize=3)}
    assert (await harness.api.post("/api/store/S3", params=params, data=b"x" * 10)).status == 200
    too_big = await harness.api.post("/api/store/S3", params=params, data=b"x" * 11)
    assert too_big.status == 413
    too_small = await harness.api.post("/api/store/S3", params=params, data=b"x" * 2)
    assert too_small.status == 422
    files = await harness.service.registry.list_files(app.api_key)
    assert [f.size for f in files] == [10]


async def test_max_upload_size_enforced_while_streaming(harness: Harness) -> None:
    harness.settings.max_upload_bytes = 1000

    async def body() -> AsyncIterator[bytes]:
        for _ in range(10):
            yield b"z" * 500

    resp = await harness.api.post(
        "/api/store/S3", params={"key": harness.open_app.api_key}, data=body()
    )
    assert resp.status == 413
    assert await harness.service.registry.list_files(harness.open_app.api_key) == []
    assert list((harness.settings.data_dir / "storage").rglob("*.part")) == []


async def test_zero_byte_file(harness: Harness) -> None:
    result = await harness.store(b"")
    assert result["size"] == 0
    meta = await harness.api.get(
        f"/api/file/{result['handle']}/metadata", params={"md5": "true", "sha256": "true"}
    )
    body = await meta.json()
    assert body["md5"] == hashlib.md5(b"").hexdigest()
    assert body["sha256"] == hashlib.sha256(b"").hexdigest()


async def test_copy_into_provider_makes_a_new_handle(harness: Harness) -> None:
    original = await harness.store(b"copy me", filename="c.txt")
    resp = await harness.api.post(
        f"/api/store/S3/{original['handle']}", params={"key": harness.open_app.api_key}
    )
    copy = await resp.json()
    assert resp.status == 200, copy
    assert copy["handle"] != original["handle"]
    assert copy["key"] != original["key"]
    assert copy["filename"] == "c.txt" and copy["size"] == 7
    download = await harness.api.get(f"/api/file/{copy['handle']}")
    assert await download.read() == b"copy me"
    other = await harness.api.post(
        f"/api/store/S3/{original['handle']}", params={"key": harness.secure_app.api_key}
    )
    assert other.status in (401, 404)


async def test_apps_sharing_one_default_store_never_meet(tmp_path: Path) -> None:
    """A default store shared by all apps (one bucket, one root) keeps each app under its
    own prefix: the same path in two apps is two objects, and clients see their own keys."""
    settings = Settings(
        data_dir=tmp_path / "data",
        access_log=False,
        default_storage={"type": "local", "root": str(tmp_path / "shared")},
    )
    parts = assemble(settings)

    await parts.start()
    apps = [App(api_key=f"shared{i}".ljust(20, "0"), secret="s") for i in range(2)]
    client = TestClient(TestServer(api_app(parts)))
    await client.start_server()
    try:
        for i, app in enumerate(apps):
            await parts.registry.create_app(app)
            resp = await client.post(
                "/api/store/S3",
                params={"key": app.api_key, "path": "same/name.txt"},
                data=f"app {i}".encode(),
            )
            assert (await resp.json())["key"] == "same/name.txt"
        for i, app in enumerate(apps):
            (record,) = await parts.registry.list_files(app.api_key)
            body = await (await client.get(f"/api/file/{record.handle}")).read()
            assert body == f"app {i}".encode()
            on_disk = tmp_path / "shared" / "objects" / "default" / app.api_key / "same/name.txt"
            assert on_disk.read_bytes() == body
    finally:
        await client.close()
        await parts.close()
