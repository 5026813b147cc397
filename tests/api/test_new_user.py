"""What a new user tripped on (issue 24), at the API: HTTP Basic with another user than
``app`` says what the user must be; Basic credentials on a call that needs none are no
401; ``GET /`` on the API port leads to the console."""

from __future__ import annotations

import base64

import pytest

from tests.api.harness import Harness


def basic(user: str, secret: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{secret}".encode()).decode()}


WRONG = [
    basic("admin", "open-secret"),
    basic("app", "not-the-secret"),
    basic("app", ""),
    {"Authorization": "Bearer something"},
    {"Authorization": "Basic !!!"},
]


async def test_another_basic_user_is_told_to_use_app(harness: Harness) -> None:
    handle = (await harness.store(b"x", app=harness.secure_app))["handle"]
    resp = await harness.api.get(
        f"/api/file/{handle}", headers=basic(harness.secure_app.api_key, "secure-secret")
    )
    assert resp.status == 401
    error = (await resp.json())["error"]
    assert error["code"] == "INVALID_CREDENTIALS" and "must be `app`" in error["message"]


@pytest.mark.parametrize("headers", WRONG, ids=["user", "secret", "empty", "bearer", "base64"])
async def test_basic_credentials_on_a_call_that_needs_none_are_no_401(
    harness: Harness, headers: dict[str, str]
) -> None:
    handle = (await harness.store(b"open file"))["handle"]
    key = {"key": harness.open_app.api_key}
    for client, path in ((harness.api, f"/api/file/{handle}"), (harness.cdn, f"/{handle}")):
        resp = await client.get(path, headers=headers)
        assert (resp.status, await resp.read()) == (200, b"open file")
    resp = await harness.api.get(f"/api/file/{handle}/metadata", headers=headers)
    assert resp.status == 200
    resp = await harness.api.post("/api/store/S3", params=key, data=b"new", headers=headers)
    assert resp.status == 200
    # Where credentials are needed, the same headers are still refused.
    secure = {"key": harness.secure_app.api_key}
    resp = await harness.api.post("/api/store/S3", params=secure, data=b"new", headers=headers)
    assert resp.status == 401
    assert (await resp.json())["error"]["code"] == "INVALID_CREDENTIALS"


async def test_the_api_root_redirects_to_the_console(harness: Harness) -> None:
    resp = await harness.api.get("/", allow_redirects=False)
    assert resp.status == 302 and resp.headers["Location"] == "/console"
    resp = await harness.api.get("/")
    assert resp.status == 200 and "text/html" in resp.headers["Content-Type"]
