"""The API's key flows, sent through nginx to three real ``stowage serve`` processes on S3
(test_api_suite.py runs the whole tests/api suite through nginx to in-process nodes; here
the nodes are the real command, configured from the environment as an operator would)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from stowage.core.security import encode_policy, sign
from tests.multinode.cluster import Cluster


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as session:
        yield session


def signed(secret: str, **fields: Any) -> dict[str, str]:
    fields.setdefault("expiry", int(time.time()) + 600)
    encoded = encode_policy(fields)
    return {"policy": encoded, "signature": sign(secret, encoded)}


async def store(
    http: aiohttp.ClientSession, cluster: Cluster, data: Any, **params: str
) -> dict[str, Any]:
    url = f"{cluster.lb.api}/api/store/S3"
    async with http.post(url, params={"key": cluster.key, **params}, data=data) as resp:
        assert resp.status == 200, await resp.text()
        result: dict[str, Any] = await resp.json()
        return result


async def test_store_raw_and_download_with_range_etag_and_head(
    cluster: Cluster, http: aiohttp.ClientSession
) -> None:
    stored = await store(http, cluster, b"0123456789", filename="digits.txt")
    assert (stored["size"], stored["type"], stored["filename"]) == (10, "text/plain", "digits.txt")
    url = f"{cluster.lb.api}/api/file/{stored['handle']}"
    async with http.get(url) as resp:
        assert await resp.read() == b"0123456789"
        etag = resp.headers["ETag"]
        assert resp.headers["X-Content-Type-Options"] == "nosniff"
    async with http.get(url, headers={"Range": "bytes=2-4"}) as resp:
        assert resp.status == 206 and await resp.read() == b"234"
    async with http.get(url, headers={"If-None-Match": etag}) as resp:
        assert resp.status == 304
    async with http.head(url) as resp:
        assert resp.status == 200 and resp.headers["Content-Length"] == "10"
    async with http.get(url, params={"dl": "true"}) as resp:
        assert resp.headers["Content-Disposition"].startswith("attachment")
    async with http.get(stored["url"]) as resp:  # the CDN link, also through nginx
        assert resp.status == 200 and await resp.read() == b"0123456789"


async def test_multipart_form_and_metadata_hashes(
    cluster: Cluster, http: aiohttp.ClientSession
) -> None:
    form = aiohttp.FormData()
    form.add_field("fileUpload", b"\x89PNG\r\n\x1a\nrest", filename="pic.png")
    stored = await store(http, cluster, form)
    assert stored["type"] == "image/png" and stored["filename"] == "pic.png"
    meta_url = f"{cluster.lb.api}/api/file/{stored['handle']}/metadata"
    params = {"size": "true", "md5": "true", "sha256": "true", "filename": "true"}
    async with http.get(meta_url, params=params) as resp:
        meta = await resp.json()
    body = b"\x89PNG\r\n\x1a\nrest"
    assert meta == {
        "size": len(body),
        "md5": hashlib.md5(body).hexdigest(),
        "sha256": hashlib.sha256(body).hexdigest(),
        "filename": "pic.png",
    }


async def test_store_from_url(cluster: Cluster, http: aiohttp.ClientSession) -> None:
    async def source(request: web.Request) -> web.Response:
        return web.Response(body=b"fetched bytes", content_type="application/pdf")

    app = web.Application()
    app.router.add_get("/doc.pdf", source)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        url = f"http://127.0.0.1:{runner.addresses[0][1]}/doc.pdf"
        stored = await store(http, cluster, {"url": url})
    finally:
        await runner.cleanup()
    assert stored["type"] == "application/pdf"
    async with http.get(f"{cluster.lb.api}/api/file/{stored['handle']}") as resp:
        assert await resp.read() == b"fetched bytes"


async def test_large_upload_streams_through_the_balancer(
    cluster: Cluster, http: aiohttp.ClientSession
) -> None:
    block = os.urandom(1024 * 1024)
    total = 64

    async def body() -> AsyncIterator[bytes]:
        for _ in range(total):
            yield block

    stored = await store(http, cluster, body(), filename="big.bin")
    assert stored["size"] == total * len(block)
    digest = hashlib.sha256()
    async with http.get(f"{cluster.lb.api}/api/file/{stored['handle']}") as resp:
        async for chunk in resp.content.iter_chunked(1024 * 1024):
            digest.update(chunk)
    assert digest.hexdigest() == hashlib.sha256(block * total).hexdigest()


async def test_overwrite_with_secret_then_delete_with_policy(
    cluster: Cluster, http: aiohttp.ClientSession
) -> None:
    stored = await store(http, cluster, b"v1")
    handle = stored["handle"]
    url = f"{cluster.lb.api}/api/file/{handle}"
    token = base64.b64encode(f"app:{cluster.secret}".encode()).decode()
    auth = {"Authorization": f"Basic {token}"}
    async with http.post(url, params={"key": cluster.key}, data=b"v2", headers=auth) as resp:
        assert resp.status == 200, await resp.text()
    async with http.post(url, params={"key": cluster.key}, data=b"v3") as resp:
        assert resp.status in (401, 403)
        assert set(await resp.json()) == {"error"}
    async with http.get(url) as resp:
        assert await resp.read() == b"v2"
    remove = {"key": cluster.key, **signed(cluster.secret, call=["remove"], handle=handle)}
    async with http.post(f"{url}/remove", params=remove) as resp:
        assert (await resp.json())["removed"] is True
    async with http.get(url) as resp:
        assert resp.status == 404
        assert (await resp.json())["error"]["code"] == "HANDLE_NOT_FOUND"


async def test_copy_to_a_new_handle(cluster: Cluster, http: aiohttp.ClientSession) -> None:
    stored = await store(http, cluster, b"original bytes", filename="o.txt")
    url = f"{cluster.lb.api}/api/store/S3/{stored['handle']}"
    async with http.post(url, params={"key": cluster.key}) as resp:
        copy = await resp.json()
    assert copy["handle"] != stored["handle"] and copy["filename"] == "o.txt"
    async with http.get(f"{cluster.lb.api}/api/file/{copy['handle']}") as resp:
        assert await resp.read() == b"original bytes"


async def test_secure_app_needs_policies_on_every_node(
    cluster: Cluster, http: aiohttp.ClientSession
) -> None:
    app = json.loads(cluster.cli("apps", "create", "--json", "--security"))
    key, secret = app["api_key"], app["secret"]
    url = f"{cluster.lb.api}/api/store/S3"
    async with http.post(url, params={"key": key}, data=b"x") as resp:
        assert resp.status in (401, 403)
    params = {"key": key, **signed(secret, call=["store", "read"])}
    async with http.post(url, params=params, data=b"secret bytes") as resp:
        handle = (await resp.json())["handle"]
    for node in cluster.nodes:
        async with http.get(f"{node.api}/api/file/{handle}") as resp:
            assert resp.status in (401, 403)
        async with http.get(f"{node.api}/api/file/{handle}", params=params) as resp:
            assert await resp.read() == b"secret bytes"


async def test_errors_keep_their_shape_through_the_balancer(
    cluster: Cluster, http: aiohttp.ClientSession
) -> None:
    cases = [
        ("GET", "/api/file/AAAAAAAAAAAAAAAAAAAA", {}, 404),
        ("POST", "/api/store/S3", {"key": "nope"}, 400),  # UNKNOWN_API_KEY
        ("POST", "/api/store/NOPE", {"key": cluster.key}, 400),
        ("PUT", "/api/file/AAAAAAAAAAAAAAAAAAAA", {}, 405),
    ]
    for method, path, params, status in cases:
        async with http.request(method, f"{cluster.lb.api}{path}", params=params) as resp:
            assert resp.status == status, (method, path, await resp.text())
            body = await resp.json()
            assert set(body) == {"error"} and {"code", "message"} <= set(body["error"])
