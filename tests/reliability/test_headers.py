"""Checklist 35-38: ranges, conditional overwrites, Expect: 100-continue, safe headers."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.api.harness import Harness
from tests.api.test_file_ops import basic, handle_of
from tests.reliability.checks import TOTALS, assert_clean, assert_intact, expect_error

AUTH = basic("app", "open-secret")


@pytest.mark.parametrize(
    ("header", "status", "body"),
    [("bytes=4-7", 206, b"4567"), ("bytes=4-", 206, b"456789"), ("bytes=-7", 206, b"3456789")],
)
async def test_ranges_on_both_origins(
    harness: Harness, header: str, status: int, body: bytes
) -> None:
    """35 on the API and the CDN."""
    handle = handle_of(await harness.store(b"0123456789"))
    for client, path in ((harness.api, f"/api/file/{handle}"), (harness.cdn, f"/{handle}")):
        TOTALS.inputs_tried += 1
        resp = await client.get(path, headers={"Range": header})
        assert resp.status == status
        assert await resp.read() == body
        assert resp.headers["Content-Range"].endswith("/10")


@pytest.mark.parametrize("header", ["bytes=10-", "bytes=20-30", "bytes=-0", "bytes=x-y"])
async def test_unsatisfiable_ranges_are_416(harness: Harness, header: str) -> None:
    handle = handle_of(await harness.store(b"0123456789"))
    resp = await harness.api.get(f"/api/file/{handle}", headers={"Range": header})
    TOTALS.inputs_tried += 1
    assert resp.status == 416
    assert resp.headers["Content-Range"] == "bytes */10"


async def test_any_range_on_an_empty_object_is_416(harness: Harness) -> None:
    handle = handle_of(await harness.store(b""))
    for header in ("bytes=0-", "bytes=0-0", "bytes=-1"):
        TOTALS.inputs_tried += 1
        resp = await harness.api.get(f"/api/file/{handle}", headers={"Range": header})
        assert resp.status == 416


async def _etag(harness: Harness, handle: str) -> str:
    return (await harness.api.head(f"/api/file/{handle}")).headers["ETag"]


async def test_overwrite_with_stale_if_match_is_412(harness: Harness) -> None:
    """36: If-Match with the ETag the writer saw; a stale one changes nothing."""
    result = await harness.store(b"version 1")
    handle = handle_of(result)
    seen = await _etag(harness, handle)
    await asyncio.sleep(0.01)  # a new mtime: a new ETag
    first = await harness.api.post(
        f"/api/file/{handle}", data=b"version 2", headers={**AUTH, "If-Match": seen}
    )
    assert first.status == 200, await first.text()
    stale = await harness.api.post(
        f"/api/file/{handle}", data=b"version 3", headers={**AUTH, "If-Match": seen}
    )
    await expect_error(stale, 412, "PRECONDITION_FAILED")
    path = harness.object_path(harness.open_app, result["key"])
    assert_intact(path.read_bytes(), b"version 2")
    current = await _etag(harness, handle)
    ok = await harness.api.post(
        f"/api/file/{handle}", data=b"version 3", headers={**AUTH, "If-Match": current}
    )
    assert ok.status == 200
    await assert_clean(harness.service)


async def test_if_none_match_star_on_an_existing_key_is_412(harness: Harness) -> None:
    """36: `If-None-Match: *` means create only; on an existing file it changes nothing."""
    result = await harness.store(b"exists")
    resp = await harness.api.post(
        f"/api/file/{handle_of(result)}", data=b"new", headers={**AUTH, "If-None-Match": "*"}
    )
    await expect_error(resp, 412, "PRECONDITION_FAILED")
    # On store with a path: an object already there (even one no handle owns) is kept.
    orphan = harness.object_path(harness.open_app, "dir/present.txt")
    orphan.parent.mkdir(parents=True)
    orphan.write_bytes(b"not ours")
    resp = await harness.api.post(
        "/api/store/S3",
        params={"key": harness.open_app.api_key, "path": "dir/present.txt"},
        data=b"new",
        headers={"If-None-Match": "*"},
    )
    await expect_error(resp, 412, "PRECONDITION_FAILED")
    assert_intact(orphan.read_bytes(), b"not ours")
    assert_intact(harness.object_path(harness.open_app, result["key"]).read_bytes(), b"exists")


async def _raw_exchange(
    harness: Harness, head: bytes, body: bytes, wait: bool = True
) -> tuple[bytes, bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", harness.api.port)
    try:
        writer.write(head if wait else head + body)
        await writer.drain()
        interim = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        if not interim.startswith(b"HTTP/1.1 100") or not wait:
            return interim, b""
        writer.write(body)
        await writer.drain()
        final = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        return interim, final
    finally:
        writer.close()


def _expect_head(harness: Harness, expect: str, length: int) -> bytes:
    return (
        f"POST /api/store/S3?key={harness.open_app.api_key} HTTP/1.1\r\nHost: x\r\n"
        f"Content-Type: application/octet-stream\r\nContent-Length: {length}\r\n"
        f"Expect: {expect}\r\nConnection: close\r\n\r\n"
    ).encode()


async def test_expect_100_continue(harness: Harness) -> None:
    """37 (s3tests test_100_continue): 100 first, then the body is stored."""
    interim, final = await _raw_exchange(
        harness, _expect_head(harness, "100-continue", 5), b"hello"
    )
    TOTALS.inputs_tried += 1
    assert interim.startswith(b"HTTP/1.1 100")
    assert final.startswith(b"HTTP/1.1 200")


@pytest.mark.parametrize("expect", ["200", "", "100-continue-please"])
async def test_mismatched_expect_is_417_and_stores_nothing(harness: Harness, expect: str) -> None:
    """37 (s3tests bad_expect_mismatch / empty)."""
    head = _expect_head(harness, expect, 5)
    interim, _ = await _raw_exchange(harness, head, b"hello", wait=bool(expect))
    TOTALS.inputs_tried += 1
    assert interim.startswith((b"HTTP/1.1 417", b"HTTP/1.1 400")) or (
        expect == "" and interim.startswith(b"HTTP/1.1 200")
    ), interim
    await asyncio.sleep(0.1)
    if not interim.startswith(b"HTTP/1.1 200"):
        assert [f async for f in harness.service.registry.all_files()] == []
    await assert_clean(harness.service)


async def test_every_file_response_carries_safe_headers(harness: Harness) -> None:
    """38: nosniff, an ETag, a sandbox CSP, on full, ranged, HEAD and CDN answers."""
    handle = handle_of(await harness.store(b"<html>x</html>", mimetype="text/html"))
    answers = [
        await harness.api.get(f"/api/file/{handle}"),
        await harness.api.get(f"/api/file/{handle}", headers={"Range": "bytes=0-1"}),
        await harness.api.head(f"/api/file/{handle}"),
        await harness.cdn.get(f"/{handle}"),
    ]
    for resp in answers:
        assert resp.headers["X-Content-Type-Options"] == "nosniff"
        assert resp.headers["ETag"]
        assert resp.headers["Content-Disposition"].startswith("attachment")
        assert "sandbox" in resp.headers["Content-Security-Policy"]


async def test_unknown_expect_answers_the_json_error_shape(harness: Harness) -> None:
    """37: the 417 keeps the one error shape, like every other error."""
    reader, writer = await asyncio.open_connection("127.0.0.1", harness.api.port)
    try:
        writer.write(_expect_head(harness, "200-ok", 5))
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        body = await asyncio.wait_for(reader.readexactly(length), 5)
    finally:
        writer.close()
    assert head.startswith(b"HTTP/1.1 417")
    assert b"application/json" in head
    assert json.loads(body)["error"]["code"] == "EXPECTATION_FAILED"
    assert [f async for f in harness.service.registry.all_files()] == []
