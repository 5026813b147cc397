"""GCS provider specifics, against gcp-storage-emulator (and a local token endpoint)."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from stowage import errors
from stowage.storage.base import WriteOptions, exists
from stowage.storage.gcs import GRANULE, GcsProvider, from_config
from tests.servers.fx_gcs import BUCKET, gcs_config
from tests.servers.ports import free_port

OPTS = WriteOptions()


async def pieces(data: bytes, size: int) -> AsyncIterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


async def failing(data: bytes, size: int) -> AsyncIterator[bytes]:
    async for piece in pieces(data, size):
        yield piece
    raise errors.PayloadTooLarge("source failed after sending everything it had")


async def read(provider: GcsProvider, key: str) -> bytes:
    out = bytearray()
    async for chunk in provider.open(BUCKET, key):
        out += chunk
    return bytes(out)


async def listed(endpoint: str, prefix: str) -> list[str]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{endpoint}/storage/v1/b/{BUCKET}/o", params={"prefix": prefix}) as resp,
    ):
        body = await resp.json(content_type=None)
    return [item["name"] for item in body.get("items", [])]


@pytest.fixture
async def small_pieces(gcs_endpoint: str, tmp_path: Path) -> AsyncIterator[GcsProvider]:
    """Pieces of 256 KiB, so that a few hundred KiB already make a multi-piece upload."""
    provider = from_config(gcs_config(gcs_endpoint, chunk_size=GRANULE), tmp_path)
    yield provider
    await provider.close()


async def test_uneven_chunks_make_whole_pieces(small_pieces: GcsProvider) -> None:
    data = os.urandom(5 * GRANULE + 12_345)
    key = f"gcs/{secrets.token_hex(6)}"
    info = await small_pieces.write(BUCKET, key, pieces(data, 100_001), OPTS)
    assert info.size == len(data)
    assert await read(small_pieces, key) == data


async def test_exact_multiple_of_piece_size(small_pieces: GcsProvider) -> None:
    data = os.urandom(3 * GRANULE)
    key = f"gcs/{secrets.token_hex(6)}"
    await small_pieces.write(BUCKET, key, pieces(data, GRANULE), OPTS)
    assert await read(small_pieces, key) == data


async def test_failed_multi_piece_upload_leaves_nothing(
    small_pieces: GcsProvider, gcs_endpoint: str
) -> None:
    key = f"gcs/{secrets.token_hex(6)}"
    with pytest.raises(errors.PayloadTooLarge):
        await small_pieces.write(BUCKET, key, failing(os.urandom(4 * GRANULE), 65_536), OPTS)
    assert not await exists(small_pieces, BUCKET, key)
    assert await listed(gcs_endpoint, key) == []


async def test_failed_overwrite_keeps_previous_object(small_pieces: GcsProvider) -> None:
    key = f"gcs/{secrets.token_hex(6)}"
    old = os.urandom(3 * GRANULE + 7)
    await small_pieces.write(BUCKET, key, pieces(old, 65_536), OPTS)
    before = await small_pieces.stat(BUCKET, key)
    with pytest.raises(errors.PayloadTooLarge):
        await small_pieces.write(BUCKET, key, failing(b"x" * 5 * GRANULE, 65_536), OPTS)
    assert await small_pieces.stat(BUCKET, key) == before
    assert await read(small_pieces, key) == old


async def test_unreachable_server_is_unavailable_fast(tmp_path: Path) -> None:
    config = gcs_config(f"http://127.0.0.1:{free_port()}", timeout=3)
    provider = from_config(config, tmp_path)
    started = time.monotonic()
    try:
        with pytest.raises(errors.StorageUnavailable):
            await provider.stat(BUCKET, "k")
        with pytest.raises(errors.StorageUnavailable):
            await provider.write(BUCKET, "k", pieces(b"data", 2), OPTS)
        with pytest.raises(errors.StorageUnavailable):
            async for _ in provider.open(BUCKET, "k"):
                pass
    finally:
        await provider.close()
    assert time.monotonic() - started < 5


async def test_missing_bucket_is_misconfigured(provider_gcs: GcsProvider) -> None:
    with pytest.raises(errors.StorageMisconfigured):
        await provider_gcs.write("no-such-bucket", "k", pieces(b"data", 2), OPTS)


@pytest.mark.parametrize(
    "config",
    [
        {"type": "gcs"},
        {"type": "gcs", "bucket": "b", "anonymous": True, "chunk_size": 1000},
        {"type": "gcs", "bucket": "b", "credentials": "/nonexistent/key.json"},
        {"type": "gcs", "bucket": "b", "credentials": {"type": "service_account"}},
    ],
)
def test_bad_config_is_misconfigured(config: dict[str, Any], tmp_path: Path) -> None:
    with pytest.raises(errors.StorageMisconfigured):
        from_config(config, tmp_path)


def _service_account(token_uri: str) -> dict[str, str]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    return {
        "type": "service_account",
        "project_id": "stowage-test",
        "private_key_id": "k1",
        "private_key": pem,
        "client_email": "stowage@stowage-test.iam.gserviceaccount.com",
        "client_id": "1",
        "token_uri": token_uri,
    }


async def test_service_account_tokens_are_fetched_once_and_sent(tmp_path: Path) -> None:
    """A local token endpoint stands in for Google's: the JWT grant goes out, and the
    bearer token it returns is sent with each storage request, fetched only once."""
    grants: list[str] = []
    auth_headers: list[str] = []

    async def token(request: web.Request) -> web.Response:
        form = await request.post()
        grants.append(str(form["grant_type"]))
        return web.json_response({"access_token": "tok-1", "expires_in": 3600})

    async def object_meta(request: web.Request) -> web.Response:
        auth_headers.append(request.headers.get("Authorization", ""))
        return web.json_response(
            {"name": "k", "size": "3", "etag": "e1", "updated": "2026-01-02T03:04:05.000Z"}
        )

    app = web.Application()
    app.router.add_post("/token", token)
    app.router.add_get("/storage/v1/b/{bucket}/o/{key}", object_meta)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    key_file = tmp_path / "sa.json"
    key_file.write_text(json.dumps(_service_account(str(server.make_url("/token")))))
    provider = from_config(
        {
            "type": "gcs",
            "bucket": "b",
            "credentials": str(key_file),
            "endpoint_url": str(server.make_url("")),
        },
        tmp_path,
    )
    try:
        first = await provider.stat("b", "k")
        await provider.stat("b", "k")
    finally:
        await provider.close()
        await server.close()
    assert grants == ["urn:ietf:params:oauth:grant-type:jwt-bearer"]
    assert auth_headers == ["Bearer tok-1", "Bearer tok-1"]
    assert first.size == 3 and first.etag == "e1"


async def test_refused_credentials_are_access_denied(tmp_path: Path) -> None:
    async def token(request: web.Request) -> web.Response:
        return web.json_response({"error": "invalid_grant"}, status=400)

    app = web.Application()
    app.router.add_post("/token", token)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    config = {
        "type": "gcs",
        "bucket": "b",
        "credentials": _service_account(str(server.make_url("/token"))),
        "endpoint_url": str(server.make_url("")),
    }
    provider = from_config(config, tmp_path)
    try:
        with pytest.raises(errors.StorageAccessDenied):
            await provider.stat("b", "k")
    finally:
        await provider.close()
        await server.close()


class FaultyProxy:
    """Forwards everything to the emulator, but fails data-carrying upload PUTs as planned:
    "before" answers 503 without forwarding, "after" forwards and then answers 503
    (the server holds the piece, the client does not know)."""

    def __init__(self, upstream: str, plan: list[str]) -> None:
        self.upstream = upstream
        self.plan = plan
        self.ranges: list[str] = []
        self.session_methods: list[str] = []
        self.server = TestServer(self._app(), host="127.0.0.1")

    def _app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        return app

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        if "upload_id" in request.query:
            self.session_methods.append(request.method)
        content_range = request.headers.get("Content-Range", "")
        mode = "ok"
        if content_range:
            self.ranges.append(content_range)
            if body and self.plan:
                mode = self.plan.pop(0)
        if mode == "before":
            return web.Response(status=503)
        response = await self._forward(request, body)
        return web.Response(status=503) if mode == "after" else response

    async def _forward(self, request: web.Request, body: bytes) -> web.Response:
        skip = {"content-length", "transfer-encoding", "content-encoding"}
        headers = {k: v for k, v in request.headers.items() if k.lower() not in skip}
        async with (
            aiohttp.ClientSession(auto_decompress=False) as session,
            session.request(
                request.method, self.upstream + request.path_qs, headers=headers, data=body
            ) as resp,
        ):
            payload = await resp.read()
            out = {k: v for k, v in resp.headers.items() if k.lower() not in skip}
            return web.Response(status=resp.status, headers=out, body=payload)


@pytest.fixture
async def faulty(gcs_endpoint: str) -> AsyncIterator[FaultyProxy]:
    proxy = FaultyProxy(gcs_endpoint, [])
    await proxy.server.start_server()
    yield proxy
    await proxy.server.close()


def _through(proxy: FaultyProxy, tmp_path: Path, **overrides: Any) -> GcsProvider:
    config = gcs_config(
        str(proxy.server.make_url("")).rstrip("/"),
        chunk_size=GRANULE,
        retry_backoff=0.01,
        **overrides,
    )
    return from_config(config, tmp_path)


async def test_lost_pieces_are_resumed(faulty: FaultyProxy, tmp_path: Path) -> None:
    # Piece 2 never reaches the server; piece 4 does, but its reply is lost; the final
    # piece is refused once.
    faulty.plan[:] = ["ok", "before", "ok", "ok", "after", "ok", "before"]
    provider = _through(faulty, tmp_path)
    data = os.urandom(5 * GRANULE + 1000)
    key = f"gcs/{secrets.token_hex(6)}"
    try:
        info = await provider.write(BUCKET, key, pieces(data, 50_000), OPTS)
        assert info.size == len(data)
        assert await read(provider, key) == data
    finally:
        await provider.close()
    assert faulty.plan == []
    assert faulty.ranges.count("bytes */*") == 2  # asked where it stood after each lost piece
    assert f"bytes */{len(data)}" in faulty.ranges


async def test_persistent_failure_gives_up_and_leaves_nothing(
    faulty: FaultyProxy, tmp_path: Path
) -> None:
    faulty.plan[:] = ["ok"] + ["before"] * 10
    provider = _through(faulty, tmp_path, retries=2)
    key = f"gcs/{secrets.token_hex(6)}"
    try:
        with pytest.raises(errors.StorageUnavailable):
            await provider.write(BUCKET, key, pieces(os.urandom(4 * GRANULE), 65_536), OPTS)
        assert not await exists(provider, BUCKET, key)
    finally:
        await provider.close()
    assert faulty.plan == ["before"] * 7  # the first try and two retries
    assert faulty.session_methods[-1] == "DELETE"  # the session was cancelled


async def test_cancelled_write_leaves_nothing(faulty: FaultyProxy, tmp_path: Path) -> None:
    provider = _through(faulty, tmp_path)
    key = f"gcs/{secrets.token_hex(6)}"
    reached = asyncio.Event()

    async def stalls() -> AsyncIterator[bytes]:
        for _ in range(3):
            yield os.urandom(GRANULE)
        reached.set()
        await asyncio.Event().wait()
        yield b""  # never reached

    try:
        task = asyncio.create_task(provider.write(BUCKET, key, stalls(), OPTS))
        await reached.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not await exists(provider, BUCKET, key)
    finally:
        await provider.close()
    assert faulty.session_methods[-1] == "DELETE"
