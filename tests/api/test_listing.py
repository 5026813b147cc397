"""GET /api/files: pages by handle, always guarded."""

from __future__ import annotations

import base64
import time

from tests.api.harness import Harness


def _basic(secret: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"app:{secret}".encode()).decode()}


async def test_pages_cover_every_file_once(harness: Harness) -> None:
    app = harness.open_app
    stored = {
        (await harness.store(f"file {i}".encode(), filename=f"f{i}.txt"))["handle"]
        for i in range(5)
    }
    seen: list[str] = []
    after = None
    while True:
        params = {"key": app.api_key, "limit": "2", **({"after": after} if after else {})}
        resp = await harness.api.get("/api/files", params=params, headers=_basic(app.secret))
        assert resp.status == 200, await resp.text()
        assert resp.headers["Cache-Control"] == "no-store"
        page = await resp.json()
        assert len(page["files"]) <= 2
        seen += [f["handle"] for f in page["files"]]
        after = page["next"]
        if after is None:
            break
    assert seen == sorted(stored)
    first = (
        await (
            await harness.api.get(
                "/api/files", params={"key": app.api_key}, headers=_basic(app.secret)
            )
        ).json()
    )["files"][0]
    assert set(first) == {
        "handle",
        "filename",
        "size",
        "mimetype",
        "uploaded",
        "location",
        "provider",
        "container",
        "key",
    }
    assert first["filename"].startswith("f") and first["size"] == 6 and first["location"] == "local"


async def test_listing_never_shows_other_apps_files(harness: Harness) -> None:
    await harness.store(b"secret", app=harness.secure_app)
    mine = await harness.store(b"mine")
    app = harness.open_app
    resp = await harness.api.get(
        "/api/files", params={"key": app.api_key}, headers=_basic(app.secret)
    )
    assert [f["handle"] for f in (await resp.json())["files"]] == [mine["handle"]]


async def test_listing_always_needs_credentials(harness: Harness) -> None:
    app = harness.open_app  # security off: reads are open, listing is not
    await harness.store(b"x")
    resp = await harness.api.get("/api/files", params={"key": app.api_key})
    assert resp.status == 401
    assert (await resp.json())["error"]["code"] == "AUTH_REQUIRED"
    wrong = await harness.api.get("/api/files", params={"key": app.api_key}, headers=_basic("nope"))
    assert wrong.status == 401


async def test_read_or_stat_policy_lists_other_calls_do_not(harness: Harness) -> None:
    app = harness.secure_app
    await harness.store(b"x", app=app)
    for call in ("read", "stat"):
        resp = await harness.api.get(
            "/api/files", params={"key": app.api_key, **harness.policy(app, call=[call])}
        )
        assert resp.status == 200, (call, await resp.text())
        assert len((await resp.json())["files"]) == 1
    for policy in ({"call": ["store"]}, {"call": ["read"], "handle": "AAAAAAAAAAAAAAAAAAAA"}):
        resp = await harness.api.get(
            "/api/files", params={"key": app.api_key, **harness.policy(app, **policy)}
        )
        assert resp.status == 403, policy
        assert (await resp.json())["error"]["code"] == "POLICY_DENIED"
    expired = harness.policy(app, call=["read"], expiry=int(time.time()) - 10)
    resp = await harness.api.get("/api/files", params={"key": app.api_key, **expired})
    assert resp.status == 403


async def test_bad_parameters(harness: Harness) -> None:
    app = harness.open_app
    # another script's digits ("\u0661\u0660" is ten to int(); "\u00b2" passed isdigit)
    others = [{"limit": d} for d in ("\u0661\u0660", "\uff15", "\u00b2", "1\u0966")]
    for params in (
        {"limit": "0"},
        {"limit": "1001"},
        {"limit": "x"},
        {"after": "../etc"},
        *others,
    ):
        resp = await harness.api.get(
            "/api/files", params={"key": app.api_key, **params}, headers=_basic(app.secret)
        )
        assert resp.status == 400, params
        assert (await resp.json())["error"]["code"] == "INVALID_PARAMETER"
    resp = await harness.api.get("/api/files", params={"key": "nokey"}, headers=_basic(app.secret))
    assert resp.status == 400  # UNKNOWN_API_KEY, as everywhere (issue 22)


async def test_metrics_show_the_webhook_queue_depth(harness: Harness) -> None:
    from stowage.registry.base import WebhookDelivery

    later = time.time() + 3600  # not due: the worker leaves them queued
    rows = [
        WebhookDelivery(
            0, n, harness.open_app.api_key, "http://hook", "store", "h", "{}", next_attempt=later
        )
        for n in (1, 2, 3)
    ]
    await harness.service.registry.enqueue_webhooks(rows)
    text = await harness.metrics()
    depth = [x for x in text.splitlines() if x.startswith("stowage_webhook_queue_depth ")]
    assert [float(x.split()[1]) for x in depth] == [3]
