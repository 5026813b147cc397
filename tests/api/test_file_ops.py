"""Download (4.1), overwrite (4.3), delete/remove (4.4) and the CDN origin."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator

import pytest

from tests.api.harness import Harness


def basic(user: str, secret: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{secret}".encode()).decode()}


def handle_of(result: dict[str, str]) -> str:
    return result["url"].rsplit("/", 1)[-1]


# -- download -----------------------------------------------------------------
async def test_download_streams_the_file_with_safe_headers(harness: Harness) -> None:
    result = await harness.store(b"0123456789", filename="digits.txt")
    resp = await harness.api.get(f"/api/file/{handle_of(result)}")
    assert resp.status == 200
    assert await resp.read() == b"0123456789"
    assert resp.headers["Content-Type"].startswith("text/plain")
    assert resp.headers["X-Content-Type-Options"] == "nosniff"
    assert resp.headers["Content-Disposition"].startswith("inline;")
    assert "sandbox" in resp.headers["Content-Security-Policy"]
    assert resp.headers["ETag"]
    assert resp.headers["Last-Modified"]
    assert resp.headers["Cache-Control"] == "private, no-cache"


async def test_dl_forces_attachment(harness: Harness) -> None:
    result = await harness.store(b"x", filename='résumé "final".txt')
    resp = await harness.api.get(f"/api/file/{handle_of(result)}", params={"dl": "true"})
    disposition = resp.headers["Content-Disposition"]
    assert disposition.startswith("attachment;")
    assert "filename*=UTF-8''r%C3%A9sum%C3%A9%20%22final%22.txt" in disposition
    assert '"final"' not in disposition.split("filename*")[0].split("filename=")[1][1:-3]


async def test_cache_false_means_no_store(harness: Harness) -> None:
    result = await harness.store(b"x")
    resp = await harness.api.get(f"/api/file/{handle_of(result)}", params={"cache": "false"})
    assert resp.headers["Cache-Control"] == "no-store"


async def test_head_sends_headers_only(harness: Harness) -> None:
    result = await harness.store(b"hello head", filename="h.txt")
    resp = await harness.api.head(f"/api/file/{handle_of(result)}")
    assert resp.status == 200
    assert resp.headers["Content-Length"] == "10"
    assert resp.headers["X-File-Name"] == "h.txt"
    assert await resp.read() == b""


@pytest.mark.parametrize(
    ("header", "status", "body", "content_range"),
    [
        ("bytes=4-7", 206, b"4567", "bytes 4-7/10"),
        ("bytes=4-", 206, b"456789", "bytes 4-9/10"),
        ("bytes=-3", 206, b"789", "bytes 7-9/10"),
        ("bytes=20-30", 416, None, "bytes */10"),
    ],
)
async def test_ranges(
    harness: Harness, header: str, status: int, body: bytes | None, content_range: str
) -> None:
    result = await harness.store(b"0123456789")
    resp = await harness.api.get(f"/api/file/{handle_of(result)}", headers={"Range": header})
    assert resp.status == status
    assert resp.headers["Content-Range"] == content_range
    if body is not None:
        assert await resp.read() == body


async def test_etag_revalidation(harness: Harness) -> None:
    result = await harness.store(b"cache me")
    first = await harness.api.get(f"/api/file/{handle_of(result)}")
    etag = first.headers["ETag"]
    again = await harness.api.get(f"/api/file/{handle_of(result)}", headers={"If-None-Match": etag})
    assert again.status == 304


async def test_active_types_are_attachments(harness: Harness) -> None:
    result = await harness.store(b"<html><script>alert(1)</script></html>", filename="x.png")
    resp = await harness.api.get(f"/api/file/{handle_of(result)}")
    assert resp.headers["Content-Type"].startswith("text/html")
    assert resp.headers["Content-Disposition"].startswith("attachment;")
    result = await harness.store(
        b"<svg xmlns='http://www.w3.org/2000/svg'/>", mimetype="image/svg+xml"
    )
    resp = await harness.api.get(f"/api/file/{handle_of(result)}")
    assert resp.headers["Content-Disposition"].startswith("attachment;")


async def test_compressed_sibling_object_is_never_served(harness: Harness) -> None:
    await harness.store(b"SECRET OTHER OBJECT", path="doc.txt.gz")
    mine = await harness.store(b"my content", path="doc.txt")
    resp = await harness.api.get(
        f"/api/file/{handle_of(mine)}", headers={"Accept-Encoding": "gzip, br"}
    )
    assert await resp.read() == b"my content"
    assert "Content-Encoding" not in resp.headers


async def test_unknown_and_malformed_handles_are_404(harness: Harness) -> None:
    for handle in ("AAAAAAAAAAAAAAAAAAAA", "short", "x" * 200):
        resp = await harness.api.get(f"/api/file/{handle}")
        assert resp.status == 404
        assert (await resp.json())["error"]["code"] == "HANDLE_NOT_FOUND"


async def test_secure_app_download_needs_read_policy(harness: Harness) -> None:
    app = harness.secure_app
    handle = handle_of(await harness.store(b"private", app=app))
    assert (await harness.api.get(f"/api/file/{handle}")).status == 401
    good = harness.policy(app, call=["read"], handle=handle)
    assert (await harness.api.get(f"/api/file/{handle}", params=good)).status == 200
    other = harness.policy(app, call=["read"], handle="B" * 20)
    assert (await harness.api.get(f"/api/file/{handle}", params=other)).status == 403
    expired = harness.policy(app, call=["read"], expiry=1)
    resp = await harness.api.get(f"/api/file/{handle}", params=expired)
    assert (await resp.json())["error"]["code"] == "POLICY_EXPIRED"


# -- CDN origin -----------------------------------------------------------------
async def test_cdn_serves_files_revalidated_by_browsers(harness: Harness) -> None:
    handle = handle_of(await harness.store(b"from the cdn"))
    resp = await harness.cdn.get(f"/{handle}")
    assert resp.status == 200
    assert await resp.read() == b"from the cdn"
    # An overwrite keeps the URL and a browser cannot be purged: revalidate (by ETag).
    assert resp.headers["Cache-Control"] == "public, no-cache"
    assert "xkey" not in resp.headers  # no edge cache configured: no tags, nothing stored
    assert (await harness.cdn.head(f"/{handle}")).status == 200
    metadata = await harness.cdn.get(f"/{handle}/metadata", params={"size": "true"})
    assert await metadata.json() == {"size": 12}


async def test_cdn_refuses_delete_and_writes(harness: Harness) -> None:
    handle = handle_of(await harness.store(b"stay"))
    for method, path in (
        ("DELETE", f"/{handle}"),
        ("POST", f"/{handle}/remove"),
        ("POST", f"/{handle}"),
    ):
        resp = await harness.cdn.request(method, path, headers=basic("app", "open-secret"))
        assert resp.status == 400
        assert (await resp.json())["error"]["code"] == "CDN_LINK_NOT_ACCEPTED"
    assert (await harness.cdn.get(f"/{handle}")).status == 200


# -- overwrite ------------------------------------------------------------------
async def test_overwrite_with_policy(harness: Harness) -> None:
    app = harness.open_app
    handle = handle_of(await harness.store(b"old content", filename="f.txt"))
    unauth = await harness.api.post(f"/api/file/{handle}", data=b"new")
    assert unauth.status == 401
    wrong_call = harness.policy(app, call=["read"])
    assert (
        await harness.api.post(f"/api/file/{handle}", params=wrong_call, data=b"n")
    ).status == 403
    params = harness.policy(app, call=["write"], handle=handle)
    resp = await harness.api.post(
        f"/api/file/{handle}",
        params=params,
        data=b"new content!",
        headers={"Content-Type": "text/markdown"},
    )
    body = await resp.json()
    assert resp.status == 200, body
    assert set(body) >= {"url", "mimetype", "isWriteable", "size", "filename"}
    assert body["size"] == 12 and body["isWriteable"] is True and body["filename"] == "f.txt"
    assert body["mimetype"] == "text/markdown"
    assert await (await harness.api.get(f"/api/file/{handle}")).read() == b"new content!"


async def test_overwrite_with_app_secret_basic_auth(harness: Harness) -> None:
    handle = handle_of(await harness.store(b"old"))
    key = {"key": harness.open_app.api_key}
    bad = await harness.api.post(
        f"/api/file/{handle}", params=key, data=b"x", headers=basic("app", "wrong")
    )
    assert bad.status == 401
    wrong_user = await harness.api.post(
        f"/api/file/{handle}",
        params=key,
        data=b"x",
        headers=basic("admin", "open-secret"),
    )
    assert wrong_user.status == 401
    header = "Basic " + base64.b64encode(b"app:open-secret").decode()
    ok = await harness.api.post(
        f"/api/file/{handle}", params=key, data=b"via header", headers={"Authorization": header}
    )
    assert ok.status == 200
    assert await (await harness.api.get(f"/api/file/{handle}")).read() == b"via header"


async def test_overwrite_base64_and_url(harness: Harness) -> None:
    handle = handle_of(await harness.store(b"old"))
    auth = basic("app", "open-secret")
    resp = await harness.api.post(
        f"/api/file/{handle}",
        params={"base64decode": "true"},
        data=base64.b64encode(b"decoded!"),
        headers=auth,
    )
    assert (await resp.json())["size"] == 8
    assert await (await harness.api.get(f"/api/file/{handle}")).read() == b"decoded!"
    source = handle_of(await harness.store(b"from another file"))
    url = str(harness.cdn.make_url(f"/{source}"))
    resp = await harness.api.post(f"/api/file/{handle}", data={"url": url}, headers=auth)
    assert resp.status == 200, await resp.text()
    assert await (await harness.api.get(f"/api/file/{handle}")).read() == b"from another file"


async def test_failed_overwrite_keeps_old_content(harness: Harness) -> None:
    handle = handle_of(await harness.store(b"precious"))
    harness.settings.max_upload_bytes = 100

    async def body() -> AsyncIterator[bytes]:
        for _ in range(5):
            yield b"y" * 50

    resp = await harness.api.post(
        f"/api/file/{handle}", data=body(), headers=basic("app", "open-secret")
    )
    assert resp.status == 413
    assert await (await harness.api.get(f"/api/file/{handle}")).read() == b"precious"
    tmp = harness.settings.data_dir / "storage" / harness.open_app.api_key / "tmp"
    assert list(tmp.iterdir()) == []


async def test_concurrent_overwrites_end_with_one_whole_writer(harness: Harness) -> None:
    handle = handle_of(await harness.store(b"start"))
    auth = basic("app", "open-secret")
    bodies = [bytes([65 + i]) * (200_000 + i) for i in range(6)]
    results = await asyncio.gather(
        *(harness.api.post(f"/api/file/{handle}", data=b, headers=auth) for b in bodies)
    )
    assert all(r.status == 200 for r in results)
    final = await (await harness.api.get(f"/api/file/{handle}")).read()
    assert final in bodies
    meta = await (
        await harness.api.get(f"/api/file/{handle}/metadata", params={"size": "true"})
    ).json()
    assert meta["size"] == len(final)


# -- delete / remove ------------------------------------------------------------
async def test_delete_removes_file_and_link_once(harness: Harness) -> None:
    result = await harness.store(b"bye")
    handle = handle_of(result)
    path = harness.object_path(harness.open_app, result["key"])
    assert path.exists()
    assert (await harness.api.delete(f"/api/file/{handle}")).status == 401
    params = {"key": harness.open_app.api_key, **harness.policy(harness.open_app, call=["remove"])}
    resp = await harness.api.delete(f"/api/file/{handle}", params=params)
    assert resp.status == 200
    assert (await resp.json())["storage"] == "deleted"
    assert not path.exists()
    assert (await harness.api.get(f"/api/file/{handle}")).status == 404
    again = await harness.api.delete(f"/api/file/{handle}", params=params)
    assert again.status == 404


async def test_post_remove_form_and_skip_storage(harness: Harness) -> None:
    result = await harness.store(b"keep my bytes")
    handle = handle_of(result)
    resp = await harness.api.post(
        f"/api/file/{handle}/remove",
        params={"skip_storage": "true"},
        headers=basic("app", "open-secret"),
    )
    assert (await resp.json())["storage"] == "kept"
    assert (await harness.api.get(f"/api/file/{handle}")).status == 404
    path = harness.object_path(harness.open_app, result["key"])
    assert path.read_bytes() == b"keep my bytes"


async def test_remove_policy_needs_remove_call(harness: Harness) -> None:
    handle = handle_of(await harness.store(b"x"))
    params = harness.policy(harness.open_app, call=["read", "write"])
    assert (await harness.api.delete(f"/api/file/{handle}", params=params)).status == 403
    assert (await harness.api.get(f"/api/file/{handle}")).status == 200


async def test_concurrent_deletes_succeed_exactly_once(harness: Harness) -> None:
    handle = handle_of(await harness.store(b"x"))
    auth = basic("app", "open-secret")
    results = await asyncio.gather(
        *(harness.api.delete(f"/api/file/{handle}", headers=auth) for _ in range(8))
    )
    assert sorted(r.status for r in results) == [200] + [404] * 7


async def test_cloud_link_delete_keeps_original(harness: Harness) -> None:
    original = await harness.store(b"user's own object", path="cloud/original.bin")
    resp = await harness.api.post(
        "/api/store/S3",
        params={"key": harness.open_app.api_key, "path": "cloud/elsewhere.bin", "link": "true"},
    )
    assert resp.status == 404  # nothing there to link
    # the link's key must not clash with the stored handle: remove the first handle, keep bytes
    await harness.api.delete(
        f"/api/file/{handle_of(original)}",
        params={"skip_storage": "true"},
        headers=basic("app", "open-secret"),
    )
    resp = await harness.api.post(
        "/api/store/S3",
        params={"key": harness.open_app.api_key, "path": "cloud/original.bin", "link": "true"},
    )
    link = await resp.json()
    assert resp.status == 200, link
    handle = handle_of(link)
    meta = await (
        await harness.api.get(
            f"/api/file/{handle}/metadata", params={"cloud": "true", "writeable": "true"}
        )
    ).json()
    assert meta == {"cloud": True, "writeable": False}
    auth = basic("app", "open-secret")
    overwrite = await harness.api.post(f"/api/file/{handle}", data=b"x", headers=auth)
    assert overwrite.status == 409
    resp = await harness.api.delete(f"/api/file/{handle}", headers=auth)
    assert (await resp.json())["storage"] == "kept"
    path = harness.object_path(harness.open_app, "cloud/original.bin")
    assert path.read_bytes() == b"user's own object"


async def test_html_declared_as_png_is_served_as_attachment(harness: Harness) -> None:
    resp = await harness.api.post(
        "/api/store/S3",
        params={"key": harness.open_app.api_key, "mimetype": "image/png"},
        data=b"<!DOCTYPE html><script>steal()</script>",
        headers={"Content-Type": "image/png"},
    )
    handle = (await resp.json())["handle"]
    download = await harness.cdn.get(f"/{handle}")
    assert download.headers["Content-Disposition"].startswith("attachment;")
    assert download.headers["X-Content-Type-Options"] == "nosniff"


# -- addresses ending in a slash ---------------------------------------------------
@pytest.mark.parametrize("seed", range(3))
async def test_every_file_api_address_takes_a_trailing_slash(harness: Harness, seed: int) -> None:
    """``/api/file/H/`` and ``/api/file/H/metadata/`` answered 404 on the API origin while
    the CDN's took the slash. Each operation, in a random order of slashed and plain
    addresses, does what its plain address does."""
    import random

    rng = random.Random(seed)
    key, auth = {"key": harness.open_app.api_key}, basic("app", "open-secret")

    def at(path: str) -> str:
        return path + ("/" if rng.random() < 0.7 else "")

    data = rng.randbytes(rng.randrange(1, 4000))
    stored = await harness.api.post(at("/api/store/S3"), params=key, data=data)
    assert stored.status == 200, await stored.text()
    handle = handle_of(await stored.json())
    copied = await harness.api.post(at(f"/api/store/S3/{handle}"), params=key, headers=auth)
    assert copied.status == 200, await copied.text()
    got = await harness.api.get(at(f"/api/file/{handle}"))
    assert (got.status, await got.read()) == (200, data)
    newer = rng.randbytes(rng.randrange(1, 4000))
    put = await harness.api.post(at(f"/api/file/{handle}"), params=key, data=newer, headers=auth)
    assert put.status == 200, await put.text()
    meta = await harness.api.get(at(f"/api/file/{handle}/metadata"), params={"size": "true"})
    assert await meta.json() == {"size": len(newer)}
    listed = await harness.api.get(at("/api/files"), params=key, headers=auth)
    assert listed.status == 200, await listed.text()
    copy = handle_of(await copied.json())
    for path, method in ((f"/api/file/{handle}/remove", "POST"), (f"/api/file/{copy}", "DELETE")):
        gone = await harness.api.request(method, path + "/", headers=auth)
        assert (await gone.json())["storage"] == "deleted", path
    for removed in (handle, copy):
        assert (await harness.api.get(f"/api/file/{removed}/")).status == 404
