"""Metrics, request ids and health on the real server."""

from __future__ import annotations

import base64
import json
import re

import aiohttp

from tests.servers.stowage_serve import Running


def basic(secret: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"app:{secret}".encode()).decode()}


def sample(text: str, name: str, **labels: str) -> float:
    """The value of one series; 0 when absent."""
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        found = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', line.split(" ")[0]))
        if all(found.get(k) == v for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


async def test_metrics_count_requests_bytes_latency_and_provider_errors(server: Running) -> None:
    srv = server.server
    body = b"m" * 300_000
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{srv.api}/api/store/S3", params={"key": server.key}, data=body) as r:
            stored = await r.json()
        handle = stored["handle"]
        for _ in range(2):
            async with http.get(f"{srv.api}/api/file/{handle}") as r:
                assert len(await r.read()) == len(body)
        async with http.get(f"{srv.api}/api/file/AAAAAAAAAAAAAAAAAAAA") as r:
            assert r.status == 404
        # The object vanishes behind the service's back: a provider error.
        key_file = next((srv.data_dir / "storage").rglob(stored["key"]))
        key_file.unlink()
        async with http.get(f"{srv.api}/api/file/{handle}") as r:
            assert r.status == 404
            assert (await r.json())["error"]["code"] == "STORAGE_OBJECT_NOT_FOUND"
        async with http.get(f"{srv.api}/metrics") as r:
            assert r.status == 200
            assert r.headers["Content-Type"].startswith("text/plain")
            text = await r.text()
    store, download = "/api/store/{provider}", "/api/file/{handle}"
    assert (
        sample(text, "stowage_http_requests_total", route=store, method="POST", status="200") == 1
    )
    assert sample(text, "stowage_http_requests_total", route=download, status="200") == 2
    assert sample(text, "stowage_http_requests_total", route=download, status="404") == 2
    assert sample(text, "stowage_http_request_bytes_total", route=store) >= len(body)
    assert sample(text, "stowage_http_response_bytes_total", route=download) >= 2 * len(body)
    assert sample(text, "stowage_http_request_duration_seconds_count", route=download) == 4
    assert sample(text, "stowage_http_request_duration_seconds_bucket", route=store, le="+Inf") == 1
    assert sample(text, "stowage_provider_errors_total", code="STORAGE_OBJECT_NOT_FOUND") == 1
    for family in ("stowage_uploads_in_progress", "stowage_upload_sessions_total"):
        assert f"# TYPE {family} " in text
    # Every sample line is valid exposition format.
    for line in text.splitlines():
        assert line.startswith("#") or re.fullmatch(r"[a-z_]+(\{.*\})? [0-9.e+Inf-]+", line), line


async def test_request_id_is_echoed_or_made(server: Running) -> None:
    srv = server.server
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{srv.api}/healthz", headers={"X-Request-Id": "abc-123.x"}) as r:
            assert r.headers["X-Request-Id"] == "abc-123.x"
        for bad in ("has space", "x" * 200, "evil\u00e9"):
            async with http.get(f"{srv.api}/healthz", headers={"X-Request-Id": bad}) as r:
                assert re.fullmatch(r"[0-9a-f]{32}", r.headers["X-Request-Id"])
        async with http.get(f"{srv.api}/api/file/AAAAAAAAAAAAAAAAAAAA") as r:
            assert r.status == 404 and re.fullmatch(r"[0-9a-f]{32}", r.headers["X-Request-Id"])
        async with http.get(f"{srv.cdn}/AAAAAAAAAAAAAAAAAAAA") as r:
            assert "X-Request-Id" in r.headers
        async with http.get(f"{srv.api}/readyz") as r:
            assert r.status == 200 and (await r.json())["status"] == "ready"


async def test_json_log_lines_carry_the_request_id(json_server: Running) -> None:
    srv = json_server.server
    headers = {"X-Request-Id": "trace-me-42"}
    async with aiohttp.ClientSession() as http, http.get(f"{srv.api}/healthz", headers=headers):
        pass
    srv.stop()
    assert srv.log is not None
    records = [json.loads(x) for x in srv.log.read_text().splitlines() if x.startswith("{")]
    mine = [r for r in records if r.get("request_id") == "trace-me-42"]
    assert mine and mine[0]["path"] == "/healthz" and mine[0]["status"] == 200
    assert any(r["message"].startswith("stowage serving") for r in records)
