"""Browser code on another origin can call the API (filestack-js in a page)."""

from __future__ import annotations

from tests.api.harness import Harness


async def test_preflight_for_the_upload_protocol(harness: Harness) -> None:
    resp = await harness.api.options(
        "/multipart/start",
        headers={
            "Origin": "https://app.example.com",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type",
        },
    )
    assert resp.status == 204
    assert resp.headers["Access-Control-Allow-Origin"] == "*"
    assert "POST" in resp.headers["Access-Control-Allow-Methods"]
    assert resp.headers["Access-Control-Allow-Headers"] == "content-type"


async def test_responses_expose_etag_to_pages(harness: Harness) -> None:
    result = await harness.store(b"x")
    resp = await harness.api.get(
        f"/api/file/{result['handle']}", headers={"Origin": "https://app.example.com"}
    )
    assert resp.headers["Access-Control-Allow-Origin"] == "*"
    assert "ETag" in resp.headers["Access-Control-Expose-Headers"]
    no_origin = await harness.api.get(f"/api/file/{result['handle']}")
    assert "Access-Control-Allow-Origin" not in no_origin.headers


async def test_errors_carry_cors_headers_too(harness: Harness) -> None:
    resp = await harness.api.get(
        "/api/file/AAAAAAAAAAAAAAAAAAAA", headers={"Origin": "https://app.example.com"}
    )
    assert resp.status == 404
    assert resp.headers["Access-Control-Allow-Origin"] == "*"


async def test_an_origin_list_allows_only_those(harness: Harness) -> None:
    harness.settings.cors_origins = "https://ok.example.com"
    from aiohttp.test_utils import TestClient, TestServer

    from stowage.http.app import api_app

    client = TestClient(TestServer(api_app(harness.parts)))
    await client.start_server()
    try:
        ok = await client.get("/healthz", headers={"Origin": "https://ok.example.com"})
        assert ok.headers["Access-Control-Allow-Origin"] == "https://ok.example.com"
        other = await client.get("/healthz", headers={"Origin": "https://evil.example.com"})
        assert "Access-Control-Allow-Origin" not in other.headers
    finally:
        await client.close()


async def test_an_allowed_origin_adds_to_what_the_answer_varies_by(harness: Harness) -> None:
    """CORS set ``Vary: Origin`` over ``Vary: Accept``: a cache then gave an auto_image
    WebP to a client that takes no WebP. Both are said now."""
    harness.settings.cors_origins = "https://ok.example.com"
    from aiohttp.test_utils import TestClient, TestServer

    from stowage.http.app import api_app
    from tests.api.test_transform import picture, stored

    handle = await stored(harness, picture(40, 30, ".png"), name="p.png")
    client = TestClient(TestServer(api_app(harness.parts)))
    await client.start_server()
    try:
        for accept in ("image/webp,*/*", "image/png"):
            resp = await client.get(
                f"/process/auto_image/{handle}",
                headers={"Origin": "https://ok.example.com", "Accept": accept},
            )
            assert resp.status == 200, await resp.read()
            varies = {v.strip().lower() for v in resp.headers["Vary"].split(",")}
            assert {"accept", "origin"} <= varies, resp.headers["Vary"]
    finally:
        await client.close()
