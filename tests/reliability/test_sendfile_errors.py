"""8: the sendfile path answers its own errors (the object vanished between the stat and
the open, or is not a file) in the error shape, not with a bare status."""

from __future__ import annotations

from pathlib import Path

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from stowage.http.responses import StoredFileResponse
from tests.reliability.checks import TOTALS


async def _serve(path: Path) -> TestClient[web.Request, web.Application]:
    async def handler(request: web.Request) -> web.StreamResponse:
        headers = {"Content-Type": "text/plain", "Content-Disposition": "inline"}
        return StoredFileResponse(path, headers=headers)

    app = web.Application()
    app.router.add_get("/f", handler)
    client = TestClient(TestServer(app))
    await client.start_server()
    return client


async def test_a_vanished_object_is_a_json_404(tmp_path: Path) -> None:
    client = await _serve(tmp_path / "gone")
    try:
        for method in ("GET", "HEAD"):
            TOTALS.inputs_tried += 1
            resp = await client.request(method, "/f")
            assert resp.status == 404
            assert resp.headers["Content-Type"].startswith("application/json")
            assert "Content-Disposition" not in resp.headers
            if method == "GET":
                body = await resp.json()
                assert body["error"]["code"] == "HANDLE_NOT_FOUND"
    finally:
        await client.close()


async def test_a_folder_where_the_object_was_is_a_json_error(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    client = await _serve(tmp_path / "dir")
    try:
        TOTALS.inputs_tried += 1
        resp = await client.get("/f")
        assert 400 <= resp.status < 500
        body = await resp.json()
        assert set(body) == {"error"} and "code" in body["error"]
    finally:
        await client.close()
