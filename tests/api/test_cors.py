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
