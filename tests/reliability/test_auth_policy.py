# ruff: noqa: E501  (tables of cases read best one per line)
"""Checklist 1-11 over HTTP: forged, expired, malformed and misused credentials on every
operation are 401/403 with the one error shape, and nothing is stored, changed or removed.
(The policy rules themselves are property-tested in tests/core/test_security.py.)"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from stowage.core.security import sign
from tests.api.harness import Harness
from tests.api.test_file_ops import basic, handle_of
from tests.reliability.checks import assert_clean, assert_intact, expect_error

SECRET = "secure-secret"


def _signed(fields: dict[str, Any] | list[Any] | str, secret: str = SECRET) -> dict[str, str]:
    raw = fields if isinstance(fields, str) else json.dumps(fields)
    encoded = base64.urlsafe_b64encode(raw.encode()).decode()
    return {"policy": encoded, "signature": sign(secret, encoded)}


def _flip(signature: str) -> str:
    return signature[:-1] + ("0" if signature[-1] != "0" else "1")


def _future() -> int:
    return int(time.time()) + 600


# (name, params builder taking the handle) -> expected status, code
FORGED: list[tuple[str, Callable[[str], dict[str, str]], int, str]] = [
    ("missing both", lambda h: {}, 401, "AUTH_REQUIRED"),  # 1
    ("missing signature", lambda h: {"policy": _signed({"expiry": _future()})["policy"]}, 401, "AUTH_REQUIRED"),  # 1
    ("missing policy", lambda h: {"signature": "ab" * 32}, 401, "AUTH_REQUIRED"),  # 1
    ("bit flipped", lambda h: {**(p := _signed({"expiry": _future()})), "signature": _flip(p["signature"])}, 403, "INVALID_SIGNATURE"),  # 2
    ("truncated", lambda h: {**(p := _signed({"expiry": _future()})), "signature": p["signature"][:-2]}, 403, "INVALID_SIGNATURE"),  # 2
    ("upper hex", lambda h: {**(p := _signed({"expiry": _future()})), "signature": p["signature"].upper()}, 403, "INVALID_SIGNATURE"),  # 2
    ("other secret", lambda h: _signed({"expiry": _future()}, "another"), 403, "INVALID_SIGNATURE"),  # 2
    ("expired 1 s", lambda h: _signed({"expiry": int(time.time()) - 1}), 403, "POLICY_EXPIRED"),  # 3, 11
    ("no expiry", lambda h: _signed({"call": ["read", "store", "write", "remove"]}), 403, "INVALID_POLICY"),  # 3
    ("expiry string", lambda h: _signed({"expiry": str(_future())}), 403, "INVALID_POLICY"),  # 3
    ("expiry float", lambda h: _signed({"expiry": _future() + 0.5}), 403, "INVALID_POLICY"),  # 3
    ("bad base64", lambda h: {"policy": "%%%", "signature": sign(SECRET, "%%%")}, 403, "INVALID_POLICY"),  # 4
    ("not json", lambda h: _signed("not json"), 403, "INVALID_POLICY"),  # 4
    ("json array", lambda h: _signed([1, 2]), 403, "INVALID_POLICY"),  # 4
    ("unknown key", lambda h: _signed({"expiry": _future(), "admin": True}), 403, "INVALID_POLICY"),  # 4
    ("wrong call", lambda h: _signed({"expiry": _future(), "call": ["pick"]}), 403, "POLICY_DENIED"),  # 5
    ("other handle", lambda h: _signed({"expiry": _future(), "handle": "A" * 20}), 403, "POLICY_DENIED"),  # 6
]  # fmt: skip

BASIC: list[tuple[str, dict[str, str], int]] = [
    ("wrong user", basic("admin", SECRET), 401),  # 10
    ("wrong secret", basic("app", "nope"), 401),
    ("empty secret", basic("app", ""), 401),
    ("non-ascii", {"Authorization": "Basic " + base64.b64encode("app:sécret".encode()).decode()}, 401),
    ("not basic", {"Authorization": "Bearer " + SECRET}, 401),
    ("bad base64", {"Authorization": "Basic !!!"}, 401),
]  # fmt: skip


async def _secure_file(harness: Harness) -> str:
    return handle_of(await harness.store(b"guarded", app=harness.secure_app))


async def _attempts(
    harness: Harness, handle: str, params: dict[str, str], headers: Any
) -> list[Any]:
    key = {"key": harness.secure_app.api_key}
    api = harness.api
    return [
        await api.post("/api/store/S3", params={**key, **params}, data=b"intruder", headers=headers),
        await api.post(f"/api/file/{handle}", params={**key, **params}, data=b"intruder", headers=headers),
        await api.delete(f"/api/file/{handle}", params={**key, **params}, headers=headers),
        await api.get(f"/api/file/{handle}", params={**key, **params}, headers=headers),
        await api.get(f"/api/file/{handle}/metadata", params={**key, **params}, headers=headers),
    ]  # fmt: skip


@pytest.mark.parametrize(("name", "build", "status", "code"), FORGED, ids=[f[0] for f in FORGED])
async def test_forged_policies_change_nothing(
    harness: Harness, name: str, build: Callable[[str], dict[str, str]], status: int, code: str
) -> None:
    handle = await _secure_file(harness)
    for resp in await _attempts(harness, handle, build(handle), None):
        await expect_error(resp, status, code)
    await _assert_untouched(harness, handle)


@pytest.mark.parametrize(("name", "headers", "status"), BASIC, ids=[b[0] for b in BASIC])
async def test_bad_basic_auth_changes_nothing(
    harness: Harness, name: str, headers: dict[str, str], status: int
) -> None:
    handle = await _secure_file(harness)
    for resp in (await _attempts(harness, handle, {}, headers))[:3]:
        await expect_error(resp, status, "INVALID_CREDENTIALS")
    await _assert_untouched(harness, handle)


async def test_path_and_url_regexes_match_whole_values(harness: Harness) -> None:
    """7, 8: a prefix match is no match, for path, container and url."""
    app = harness.secure_app
    base = {"key": app.api_key}
    policy = {
        "expiry": _future(),
        "call": ["store"],
        "path": "uploads/.*",
        "url": "https://allowed.com/.*",
    }
    cases = [
        {"path": "uploads/../x"},  # normalised first: refused as a path (400)
        {"path": "other/uploads/x"},
        {"path": "x/uploads/a"},
    ]  # fmt: skip
    for extra in cases:
        resp = await harness.api.post(
            "/api/store/S3", params={**base, **_signed(policy), **extra}, data=b"x"
        )
        await expect_error(resp, (400, 403))
    for url in ("https://allowed.com.evil.net/a", "https://evil.net/?next=https://allowed.com/"):
        resp = await harness.api.post(
            "/api/store/S3",
            params={**base, **_signed(policy), "path": "uploads/u"},
            data={"url": url},
        )
        await expect_error(resp, 403, "POLICY_DENIED")
    await assert_clean(harness.service)


async def test_size_limits_at_the_boundary(harness: Harness) -> None:
    """9: maxSize+1 is 413, minSize-1 is 422; exactly the limits pass."""
    app = harness.secure_app
    policy = _signed({"expiry": _future(), "call": ["store"], "maxSize": 10, "minSize": 5})
    params = {"key": app.api_key, **policy}
    await expect_error(await harness.api.post("/api/store/S3", params=params, data=b"x" * 11), 413)
    await expect_error(await harness.api.post("/api/store/S3", params=params, data=b"x" * 4), 422)
    await assert_clean(harness.service)
    for size in (5, 10):
        assert (
            await harness.api.post("/api/store/S3", params=params, data=b"x" * size)
        ).status == 200


async def test_expiry_edges_follow_the_documented_skew(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """11: accepted while now <= expiry + policy_clock_skew (0 by default), refused 1 s past.
    The service's clock is held at one second: with the wall clock, a policy expiring at
    the next whole second was refused when the request took longer (a loaded CI)."""
    from stowage.core import service

    handle = await _secure_file(harness)
    key = {"key": harness.secure_app.api_key}
    now = int(time.time())
    monkeypatch.setattr(service, "time", SimpleNamespace(time=lambda: float(now)))
    fresh = _signed({"expiry": now, "call": ["read"]})  # the edge itself: now == expiry
    assert (await harness.api.get(f"/api/file/{handle}", params={**key, **fresh})).status == 200
    stale = _signed({"expiry": now - 1, "call": ["read"]})
    await expect_error(await harness.api.get(f"/api/file/{handle}", params={**key, **stale}), 403)
    harness.settings.policy_clock_skew = 5
    assert (await harness.api.get(f"/api/file/{handle}", params={**key, **stale})).status == 200


async def _assert_untouched(harness: Harness, handle: str) -> None:
    record = await harness.service.registry.get(handle)
    assert record is not None
    path = harness.object_path(harness.secure_app, record.key)
    assert_intact(path.read_bytes(), b"guarded")
    files = [f async for f in harness.service.registry.all_files()]
    assert [f.handle for f in files] == [handle]  # the intruder stored nothing
    await assert_clean(harness.service)


async def test_signatures_and_secrets_are_compared_in_constant_time(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """10: every credential comparison goes through hmac.compare_digest."""
    import hmac

    from stowage.core import security

    calls: list[int] = []
    real = hmac.compare_digest

    def counting(a: Any, b: Any) -> bool:
        calls.append(1)
        return real(a, b)

    monkeypatch.setattr(security.hmac, "compare_digest", counting)
    handle = await _secure_file(harness)
    await harness.api.get(f"/api/file/{handle}", params=_signed({"expiry": _future()}))
    signed = len(calls)
    await harness.api.delete(f"/api/file/{handle}", headers=basic("app", "wrong"))
    assert signed >= 1 and len(calls) > signed


@pytest.mark.parametrize(
    ("rule", "field"), [("uploads/.*", "path"), ("(?:uploads|avatars)/[a-z]+\\.png", "path")]
)
async def test_a_path_policy_reaches_the_files_it_let_be_stored(
    harness: Harness, rule: str, field: str
) -> None:
    """A policy restricted by ``path`` stored a file and then could not read it: every
    call on a handle was refused ("policy does not allow this path"). Calls on a stored
    file now match its key (and container) against the policy."""
    app = harness.secure_app
    calls = ["store", "read", "stat", "convert", "remove"]
    policy = _signed({"expiry": _future(), "call": calls, field: rule})
    png = harness_png()
    inside = await harness.api.post(
        "/api/store/S3", params={"key": app.api_key, "path": "uploads/a.png", **policy}, data=png
    )
    assert inside.status == 200, await inside.text()
    handle = handle_of(await inside.json())
    outside = await harness.store(png, app=app, path="elsewhere/b.png")
    other = handle_of(outside)
    for path in (f"/api/file/{handle}", f"/api/file/{handle}/metadata"):
        assert (await harness.api.get(path, params=policy)).status == 200, path
    assert (await harness.cdn.get(f"/resize=w:5/{handle}", params=policy)).status == 200
    for path in (f"/api/file/{other}", f"/api/file/{other}/metadata"):
        await expect_error(await harness.api.get(path, params=policy), 403, "POLICY_DENIED")
    refused = await harness.cdn.get(f"/resize=w:5/{other}", params=policy)
    await expect_error(refused, 403, "POLICY_DENIED")
    container_rule = _signed({"expiry": _future(), "call": calls, "container": "default"})
    assert (await harness.api.get(f"/api/file/{other}", params=container_rule)).status == 200
    gone = await harness.api.delete(f"/api/file/{handle}", params={"key": app.api_key, **policy})
    assert gone.status == 200


def harness_png() -> bytes:
    import pyvips

    data: bytes = pyvips.Image.black(8, 8).cast("uchar").pngsave_buffer()
    return data
