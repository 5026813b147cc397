"""The request shapes the Filestack SDKs send besides uploads: CDN URL forms, /process,
and the overwrite body variants."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import pytest

from stowage.core.security import sign
from stowage.http import cdnpath
from tests.api.harness import Harness
from tests.api.sites import serving


def js_policy(**fields: Any) -> str:
    """Standard base64 of compact JSON, as filestack-js's getSecurity makes it. (A "/" in
    it needs a "?" or non-ASCII in the JSON: cdnpath's unit test covers quoted slashes.)"""
    fields["expiry"] = int(time.time()) + 600
    return base64.b64encode(json.dumps(fields, separators=(",", ":")).encode()).decode()


def test_cdn_path_forms() -> None:
    h = "A" * 20
    assert cdnpath.parse(f"/{h}") == cdnpath.CdnPath(handle=h)
    assert cdnpath.parse(f"/{h}/metadata").metadata
    p = cdnpath.parse(f"/security=p:eyJ9,s:abc/{h}")
    assert (p.policy, p.signature, p.handle) == ("eyJ9", "abc", h)
    p = cdnpath.parse(f"/KEY/security=signature:abc,policy:%22ab/c+d=%22/{h}/metadata")
    assert (p.api_key, p.policy, p.signature, p.metadata) == ("KEY", "ab/c+d=", "abc", True)
    p = cdnpath.parse(f'/KEY/security=signature:abc,policy:"ab/c"/cache=false/{h}')
    assert (p.policy, p.cache) == ("ab/c", False)
    p = cdnpath.parse(f"/cache=expiry:600/security=p:ab%2Fc,s:x/{h}")
    assert (p.max_age, p.policy) == (600, "ab/c")


def test_cdn_path_refuses_a_bad_cache_task() -> None:
    from stowage import errors

    with pytest.raises(errors.BadRequest):
        cdnpath.parse(f"/cache=expiry:x/{'A' * 20}")


@pytest.mark.parametrize("task", ["resize=width:100", "output=format:png", "flip"])
def test_cdn_path_hands_other_tasks_to_processing(task: str) -> None:
    assert cdnpath.parse(f"/{task}/{'A' * 20}").tasks == [task]


async def test_every_cdn_form_serves_the_file(harness: Harness) -> None:
    app = harness.secure_app
    handle = (await harness.store(b"secret bytes", app=app))["handle"]
    py = harness.policy(app, call=["read", "stat"])
    pol = js_policy(call=["read", "stat"], handle=handle)
    js = {"policy": pol, "signature": sign(app.secret, pol)}
    forms = [
        f"/security=p:{py['policy']},s:{py['signature']}/{handle}",
        f'/{app.api_key}/security=signature:{js["signature"]},policy:"{js["policy"]}"/{handle}',
        f"/{app.api_key}/security=signature:{js['signature']},policy:%22{js['policy']}%22/{handle}",
        f"/cache=false/security=p:{py['policy']},s:{py['signature']}/{handle}",
    ]
    for form in forms:
        resp = await harness.cdn.get(form)
        assert resp.status == 200, (form, await resp.text())
        assert await resp.read() == b"secret bytes"
    resp = await harness.cdn.get(f"/{handle}", params={**py, "dl": "true"})
    assert resp.headers["Content-Disposition"].startswith("attachment")
    resp = await harness.cdn.get(f"/cache=false/{handle}", params=py)
    assert resp.headers["Cache-Control"] == "no-store"
    resp = await harness.cdn.get(f"/cache=expiry:60/{handle}", params=py)
    assert resp.headers["Cache-Control"] == "private, max-age=60"
    meta = await harness.cdn.get(
        f"/security=p:{py['policy']},s:{py['signature']}/{handle}/metadata",
        params={"size": "true"},
    )
    assert await meta.json() == {"size": 12}
    assert (await harness.cdn.get(f"/{handle}")).status == 401
    wrong_key = f"/{harness.open_app.api_key}/security=p:{py['policy']},s:{py['signature']}"
    assert (await harness.cdn.get(f"{wrong_key}/{handle}")).status == 404


async def test_api_file_link_head_with_key_cache_dl(harness: Harness) -> None:
    handle = (await harness.store(b"hello", filename="a.txt"))["handle"]
    query = {"key": harness.open_app.api_key, "cache": "false", "dl": "true"}
    resp = await harness.api.head(f"/api/file/{handle}", params=query)
    assert resp.status == 200
    assert resp.headers["Content-Length"] == "5"
    assert resp.headers["X-File-Name"] == "a.txt"
    assert resp.headers["Cache-Control"] == "no-store"
    assert resp.headers["Content-Disposition"].startswith("attachment")


async def test_cdn_stays_read_only(harness: Harness) -> None:
    handle = (await harness.store(b"x"))["handle"]
    for method in ("DELETE", "POST", "PUT"):
        resp = await harness.cdn.request(method, f"/{handle}")
        assert resp.status in (400, 405)
    resp = await harness.cdn.post("/process", json={}, allow_redirects=False)
    assert resp.status == 308
    assert resp.headers["Location"].endswith("/process")


@pytest.fixture
async def source_url() -> Any:
    async with serving("/doc.txt", b"fetched content", "text/plain") as url:
        yield url


async def test_process_store_task(harness: Harness, source_url: str) -> None:
    for key_name in ("apikey", "apiKey"):
        body = {
            key_name: harness.open_app.api_key,
            "sources": [source_url],
            "tasks": [{"name": "store", "params": {"location": "s3", "filename": "d.txt"}}],
        }
        resp = await harness.api.post("/process", json=body)
        result = await resp.json()
        assert resp.status == 200, result
        assert result["filename"] == "d.txt" and result["size"] == 15
        assert result["type"] == result["mimetype"] == "text/plain"
        resp = await harness.api.get(f"/api/file/{result['handle']}")
        assert await resp.read() == b"fetched content"


async def test_process_security_task_and_unsupported_tasks(
    harness: Harness, source_url: str
) -> None:
    app = harness.secure_app
    store = {"name": "store", "params": {}}
    body: dict[str, Any] = {"apikey": app.api_key, "sources": [source_url], "tasks": [store]}
    assert (await harness.api.post("/process", json=body)).status == 401
    security = {"name": "security", "params": harness.policy(app, call=["store"])}
    body["tasks"] = [store, security]
    assert (await harness.api.post("/process", json=body)).status == 200
    body["tasks"] = [store, security, {"name": "resize", "params": {"width": 10}}]
    resp = await harness.api.post("/process", json=body)
    assert resp.status == 400
    assert (await resp.json())["error"]["code"] == "UNSUPPORTED_TASK"


@pytest.mark.settings(fetch_allow_private=False)
async def test_process_keeps_the_ssrf_guard(harness: Harness) -> None:
    body = {
        "apikey": harness.open_app.api_key,
        "sources": ["http://127.0.0.1:1/x"],
        "tasks": [{"name": "store", "params": {}}],
    }
    resp = await harness.api.post("/process", json=body)
    assert resp.status == 403
    assert (await resp.json())["error"]["code"] == "URL_FORBIDDEN"


async def test_overwrite_body_variants(harness: Harness, source_url: str) -> None:
    app = harness.open_app
    handle = (await harness.store(b"v1", filename="f.bin"))["handle"]
    auth = harness.policy(app, call=["write", "writeUrl"], handle=handle)
    url = f"/api/file/{handle}"
    # go: raw bytes and no Content-Type at all
    resp = await harness.api.post(
        url, params=auth, data=b"raw-no-type", skip_auto_headers=["Content-Type"]
    )
    assert resp.status == 200, await resp.text()
    assert await (await harness.api.get(url)).read() == b"raw-no-type"
    resp = await harness.api.post(
        url, params=auth, data=b"raw-typed", headers={"Content-Type": "application/pdf"}
    )
    assert resp.status == 200
    assert await (await harness.api.get(url)).read() == b"raw-typed"
    resp = await harness.api.post(url, params=auth, data={"url": source_url})
    assert resp.status == 200
    assert await (await harness.api.get(url)).read() == b"fetched content"
