"""filestack-js 4.3.8 (npm), unchanged, against a real stowage serve (shim: js/shim.js)."""

from __future__ import annotations

import hashlib
import time
from typing import Any

import pytest
import requests

from tests.sdk.stack import JsError, Sample, Stack, run_js

ALL_CALLS = ["read", "stat", "store", "write", "remove"]


def policy(**extra: Any) -> dict[str, Any]:
    return {"expiry": int(time.time()) + 3600, "call": ALL_CALLS, **extra}


def test_upload_small_then_read_it_every_way(stack: Stack, small_file: Sample) -> None:
    up = run_js(stack, "upload", path=str(small_file.path))
    assert up["status"] == "Stored" and len(up["handle"]) == 20
    handle = up["handle"]
    got = run_js(stack, "download", handle=handle)  # <cdn>/<APIKEY>/<HANDLE>
    assert got["sha256"] == small_file.sha256
    head = run_js(stack, "retrieve", handle=handle, options={"head": True, "dl": True})
    assert head["content-length"] == str(small_file.size)
    assert head["content-disposition"].startswith("attachment")
    assert head["x-file-name"] == "hello.txt"
    body = run_js(stack, "retrieve", handle=handle, options={"cache": False})
    assert body["sha256"] == small_file.sha256
    meta = run_js(stack, "retrieve", handle=handle, options={"metadata": True})
    assert meta["filename"] == "hello.txt" and meta["size"] == small_file.size
    meta = run_js(stack, "metadata", handle=handle, options={"sha256": True, "size": True})
    assert meta == {"sha256": small_file.sha256, "size": small_file.size, "handle": handle}
    for cache, control in [(False, "no-store"), ({"expiry": 600}, "public, max-age=600")]:
        linked = run_js(stack, "link", handle=handle, cache=cache)
        assert linked["sha256"] == small_file.sha256
        assert linked["cacheControl"] == control, linked


def test_upload_large_in_parts(stack: Stack, big_file: Sample) -> None:
    before = stack.server.peak_rss_kib()
    up = run_js(stack, "upload", path=str(big_file.path))
    assert up["status"] == "Stored", up
    meta = run_js(stack, "metadata", handle=up["handle"], options={"sha256": True, "size": True})
    assert (meta["sha256"], meta["size"]) == (big_file.sha256, big_file.size)
    grown_mib = (stack.server.peak_rss_kib() - before) / 1024
    print(f"filestack-js 100 MiB upload: server peak RSS grew {grown_mib:.1f} MiB")
    assert grown_mib < 64, f"server peak memory grew {grown_mib:.1f} MiB for a 100 MiB upload"


def test_upload_intelligent_mode(stack: Stack, tmp_path: Any) -> None:
    data = hashlib.sha256(b"seed").digest() * (600 * 1024)  # 18.75 MiB: 3 parts of chunks
    path = tmp_path / "fii.bin"
    path.write_bytes(data)
    options = {"intelligent": True, "intelligentChunkSize": 1024 * 1024}
    up = run_js(stack, "upload", path=str(path), options=options)
    assert up["status"] == "Stored", up
    meta = run_js(stack, "metadata", handle=up["handle"], options={"sha256": True})
    assert meta["sha256"] == hashlib.sha256(data).hexdigest()
    assert stack.server.log is not None
    assert "POST /multipart/commit" in stack.server.log.read_text()  # chunks, then commits


def test_store_url(stack: Stack, source_site: tuple[str, bytes]) -> None:
    url, body = source_site
    stored = run_js(stack, "storeURL", url=url, store={"location": "s3", "filename": "r.bin"})
    assert stored["filename"] == "r.bin" and stored["size"] == len(body)
    assert stored["mimetype"] == stored["type"]
    got = run_js(stack, "download", handle=stored["handle"])
    assert got["sha256"] == hashlib.sha256(body).hexdigest()


def test_secure_app_with_get_security(
    stack: Stack, small_file: Sample, big_file: Sample, source_site: tuple[str, bytes]
) -> None:
    with pytest.raises(JsError):  # no policy: the start request is refused
        run_js(stack, "upload", secure=True, path=str(small_file.path))
    up = run_js(stack, "upload", secure=True, policy=policy(), path=str(small_file.path))
    handle = up["handle"]
    with pytest.raises(JsError):
        run_js(stack, "download", secure=True, handle=handle)
    # <cdn>/<APIKEY>/security=signature:<sig>,policy:<policy>/<HANDLE>
    got = run_js(stack, "download", secure=True, policy=policy(), handle=handle)
    assert got["sha256"] == small_file.sha256
    linked = run_js(stack, "link", secure=True, policy=policy(), handle=handle, cache=False)
    assert "/security=" in linked["url"] and linked["sha256"] == small_file.sha256
    meta = run_js(
        stack, "metadata", secure=True, policy=policy(), handle=handle, options={"size": True}
    )
    assert meta["size"] == small_file.size
    url, body = source_site
    stored = run_js(stack, "storeURL", secure=True, policy=policy(), url=url)
    assert stored["size"] == len(body)
    bounded = policy(maxSize=1024)
    with pytest.raises(JsError):
        run_js(stack, "upload", secure=True, policy=bounded, path=str(big_file.path))
    run_js(stack, "overwrite", secure=True, policy=policy(handle=handle), handle=handle,
           path=str(big_file.path))  # fmt: skip
    meta = run_js(stack, "metadata", secure=True, policy=policy(), handle=handle,
                  options={"sha256": True})  # fmt: skip
    assert meta["sha256"] == big_file.sha256
    removed = run_js(stack, "remove", secure=True, policy=policy(call=["remove"]), handle=handle)
    assert removed["status"] == 200
    resp = requests.get(f"{stack.api}/api/file/{handle}", timeout=10)
    assert resp.status_code in (401, 404)
