# ruff: noqa: E501  (tables of cases read best one per line)
"""Checklist 19-25: bodies that lie about their length, broken multipart, digests that do not
match, and content that claims to be what it is not."""

from __future__ import annotations

import asyncio
import base64
import hashlib

import pytest

from tests.api.harness import Harness
from tests.api.test_file_ops import basic, handle_of
from tests.reliability.checks import TOTALS, assert_clean, assert_intact, expect_error, fault


async def _raw(harness: Harness, request: bytes, body: bytes = b"", close: bool = False) -> bytes:
    """Sends bytes as they are (lengths included) and reads the answer."""
    reader, writer = await asyncio.open_connection("127.0.0.1", harness.api.port)
    writer.write(request + body)
    await writer.drain()
    if close:
        writer.write_eof()
    try:
        return await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()


def _head(harness: Harness, length: str | None, extra: str = "") -> bytes:
    lines = [
        f"POST /api/store/S3?key={harness.open_app.api_key} HTTP/1.1",
        "Host: 127.0.0.1",
        "Content-Type: application/octet-stream",
        "Connection: close",
    ]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + extra + "\r\n\r\n").encode()


async def test_zero_byte_file_has_the_hashes_of_empty_input(harness: Harness) -> None:
    """19 (mint datafile-0-b)."""
    result = await harness.store(b"")
    resp = await harness.api.get(
        f"/api/file/{handle_of(result)}/metadata", params={"md5": "true", "sha256": "true"}
    )
    meta = await resp.json()
    assert meta["md5"] == hashlib.md5(b"").hexdigest()
    assert meta["sha256"] == hashlib.sha256(b"").hexdigest()
    assert await (await harness.api.get(f"/api/file/{handle_of(result)}")).read() == b""


async def test_body_shorter_than_content_length_stores_nothing(harness: Harness) -> None:
    """20: the client promised 1000 bytes, sent 10 and closed."""
    fault()
    answer = await _raw(harness, _head(harness, "1000"), b"0123456789", close=True)
    TOTALS.inputs_tried += 1
    assert answer == b"" or answer.startswith(b"HTTP/1.1 4"), answer[:80]
    await asyncio.sleep(0.2)
    assert [f async for f in harness.service.registry.all_files()] == []
    await assert_clean(harness.service)


async def test_body_longer_than_content_length_stores_only_the_declared_bytes(
    harness: Harness,
) -> None:
    """20: bytes past Content-Length are the next request (here refused by the parser),
    never part of this file."""
    head = _head(harness, "5").replace(b"Connection: close", b"Connection: keep-alive")
    answer = await _raw(harness, head, b"01234GARBAGE\r\n\r\n")
    TOTALS.inputs_tried += 1
    assert answer.startswith((b"HTTP/1.1 200", b"HTTP/1.0 400", b"HTTP/1.1 400")), answer[:300]
    await asyncio.sleep(0.2)
    for record in [f async for f in harness.service.registry.all_files()]:
        resp = await harness.api.get(f"/api/file/{record.handle}")
        assert await resp.read() == b"01234"  # never the garbage that followed
    await assert_clean(harness.service)


@pytest.mark.parametrize("length", ["-1", "abc", "1,2", "99999999999999999999999"])
async def test_malformed_content_length_is_a_4xx(harness: Harness, length: str) -> None:
    """20: negative or nonsense lengths never reach the store."""
    answer = await _raw(harness, _head(harness, length), b"xyz")
    TOTALS.inputs_tried += 1
    assert answer.startswith((b"HTTP/1.1 4", b"HTTP/1.0 4")), answer[:80]
    await assert_clean(harness.service)


async def test_missing_content_length_with_chunked_body_is_stored(harness: Harness) -> None:
    """20: no length at all (chunked) streams and stores."""
    head = _head(harness, None, "\r\nTransfer-Encoding: chunked")
    answer = await _raw(harness, head, b"5\r\nhello\r\n0\r\n\r\n")
    TOTALS.inputs_tried += 1
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]


MULTIPART_CASES = {
    "no file part": (b'--B\r\nContent-Disposition: form-data; name="other"\r\n\r\nx\r\n--B--\r\n', "B"),
    "bad boundary": (b"--WRONG\r\nContent-Disposition: form-data; name=\"fileUpload\"; filename=\"a\"\r\n\r\nx\r\n--WRONG--\r\n", "B"),
    "no boundary": (b"--B\r\n\r\n", ""),
    "huge part header": (b"--B\r\nContent-Disposition: form-data; name=\"fileUpload\"; filename=\"" + b"a" * 70000 + b"\"\r\n\r\nx\r\n--B--\r\n", "B"),
    "two file parts": (
        b'--B\r\nContent-Disposition: form-data; name="fileUpload"; filename="a"\r\n\r\nAAA\r\n'
        b'--B\r\nContent-Disposition: form-data; name="fileUpload"; filename="b"\r\n\r\nBBB\r\n--B--\r\n',
        "B",
    ),
    "unterminated": (b'--B\r\nContent-Disposition: form-data; name="fileUpload"; filename="a"\r\n\r\nAAA', "B"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(MULTIPART_CASES))
async def test_broken_multipart_stores_nothing(harness: Harness, case: str) -> None:
    """21."""
    body, boundary = MULTIPART_CASES[case]
    ctype = f"multipart/form-data; boundary={boundary}" if boundary else "multipart/form-data"
    resp = await harness.api.post(
        "/api/store/S3",
        params={"key": harness.open_app.api_key},
        data=body,
        headers={"Content-Type": ctype},
    )
    await expect_error(resp, (400, 413))
    assert [f async for f in harness.service.registry.all_files()] == []
    await assert_clean(harness.service)


def _md5(data: bytes) -> str:
    return base64.b64encode(hashlib.md5(data).digest()).decode()


@pytest.mark.parametrize(
    "header",
    [
        {"Content-MD5": _md5(b"something else")},
        {"X-Content-SHA256": hashlib.sha256(b"something else").hexdigest()},
    ],
)
async def test_digest_mismatch_is_bad_digest_and_changes_nothing(
    harness: Harness, header: dict[str, str]
) -> None:
    """25 (s3tests bad_md5): on store nothing is kept; on overwrite the old version stays."""
    key = {"key": harness.open_app.api_key}
    resp = await harness.api.post("/api/store/S3", params=key, data=b"payload", headers=header)
    await expect_error(resp, 400, "BAD_DIGEST")
    assert [f async for f in harness.service.registry.all_files()] == []
    result = await harness.store(b"previous")
    resp = await harness.api.post(
        f"/api/file/{handle_of(result)}",
        data=b"payload",
        headers={**header, **basic("app", "open-secret")},
    )
    await expect_error(resp, 400, "BAD_DIGEST")
    assert_intact(harness.object_path(harness.open_app, result["key"]).read_bytes(), b"previous")
    await assert_clean(harness.service)


async def test_matching_digests_are_accepted(harness: Harness) -> None:
    headers = {
        "Content-MD5": _md5(b"payload"),
        "X-Content-SHA256": hashlib.sha256(b"payload").hexdigest().upper(),
    }
    resp = await harness.api.post(
        "/api/store/S3", params={"key": harness.open_app.api_key}, data=b"payload", headers=headers
    )
    assert resp.status == 200


@pytest.mark.parametrize("header", [{"Content-MD5": "not base64!"}, {"X-Content-SHA256": "abc"}])
async def test_malformed_digest_headers_are_400(harness: Harness, header: dict[str, str]) -> None:
    resp = await harness.api.post(
        "/api/store/S3", params={"key": harness.open_app.api_key}, data=b"x", headers=header
    )
    await expect_error(resp, 400, "INVALID_PARAMETER")
    await assert_clean(harness.service)


@pytest.mark.parametrize(
    "body",
    [b"<!doctype html><script>alert(1)</script>", b'<svg xmlns="http://www.w3.org/2000/svg"/>'],
)
async def test_active_content_declared_as_png_is_an_attachment(
    harness: Harness, body: bytes
) -> None:
    """22: served with nosniff, as an attachment, on both origins."""
    TOTALS.inputs_tried += 1
    result = await harness.store(body, mimetype="image/png")
    handle = handle_of(result)
    for resp in (await harness.api.get(f"/api/file/{handle}"), await harness.cdn.get(f"/{handle}")):
        assert resp.headers["X-Content-Type-Options"] == "nosniff"
        assert resp.headers["Content-Disposition"].startswith("attachment")
        assert "sandbox" in resp.headers["Content-Security-Policy"]


async def test_crafted_exif_is_time_boxed(harness: Harness) -> None:
    """24: a JPEG whose EXIF block claims to be huge and loops: a fast answer, no hang."""
    app1 = b"Exif\x00\x00MM\x00\x2a\x00\x00\x00\x08" + b"\xff\xff" + b"\x00\x00\x00\x08" * 4000
    jpeg = b"\xff\xd8\xff\xe1" + len(app1).to_bytes(2, "big")[:2] + app1[:65000] + b"\xff\xd9"
    result = await harness.store(jpeg, filename="crafted.jpg")
    params = harness.policy(harness.open_app, call=["exif"])
    loop = asyncio.get_running_loop()
    started = loop.time()
    resp = await harness.api.get(
        f"/api/file/{handle_of(result)}/metadata", params={"exif": "true", **params}
    )
    TOTALS.inputs_tried += 1
    assert resp.status in (200, 422), await resp.text()
    assert loop.time() - started < harness.settings.exif_timeout + 2
