"""One error body shape for every endpoint and both origins."""

from __future__ import annotations

from typing import Any

import pytest

from stowage import errors
from tests.api.harness import Harness

MISSING = "AAAAAAAAAAAAAAAAAAAA"
API_CASES = [
    ("POST", "/api/store/S3", {}),
    ("POST", "/api/store/S3", {"key": "unknown"}),
    ("POST", "/api/store/nowhere", {"key": "openappkey0000000001"}),
    ("POST", f"/api/store/S3/{MISSING}", {"key": "openappkey0000000001"}),
    ("GET", f"/api/file/{MISSING}", {}),
    ("HEAD", f"/api/file/{MISSING}", {}),
    ("POST", f"/api/file/{MISSING}", {}),
    ("DELETE", f"/api/file/{MISSING}", {}),
    ("POST", f"/api/file/{MISSING}/remove", {}),
    ("GET", f"/api/file/{MISSING}/metadata", {}),
    ("GET", "/api/file/x/metadata", {"policy": "%%%", "signature": "x"}),
    ("PUT", f"/api/file/{MISSING}", {}),
    ("GET", "/api/unknown", {}),
]
CDN_CASES = [
    ("GET", f"/{MISSING}", {}),
    ("DELETE", f"/{MISSING}", {}),
    ("GET", f"/{MISSING}/metadata", {}),
    ("PATCH", f"/{MISSING}", {}),
]
CODES = {cls.code for cls in errors.all_error_classes()}


def check_shape(body: Any, status: int) -> None:
    assert set(body) == {"error"}
    assert set(body["error"]) <= {"code", "message", "details"}
    assert body["error"]["code"] in CODES
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    assert 400 <= status < 600


@pytest.mark.parametrize(("method", "path", "query"), API_CASES)
async def test_api_errors_have_one_shape(
    harness: Harness, method: str, path: str, query: dict[str, str]
) -> None:
    resp = await harness.api.request(method, path, params=query, data=b"x")
    assert resp.status >= 400
    if method != "HEAD":
        check_shape(await resp.json(), resp.status)
    assert resp.headers["Content-Type"].startswith("application/json")


@pytest.mark.parametrize(("method", "path", "query"), CDN_CASES)
async def test_cdn_errors_have_one_shape(
    harness: Harness, method: str, path: str, query: dict[str, str]
) -> None:
    resp = await harness.cdn.request(method, path, params=query)
    assert resp.status >= 400
    check_shape(await resp.json(), resp.status)


def test_every_error_code_is_documented() -> None:
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "errors.md").read_text()
    for cls in errors.all_error_classes():
        assert f"`{cls.code}`" in doc, cls.code
