"""Issue 13 against a real ``stowage serve``, byte for byte (rawhttp): Range per RFC 9110,
conflicts, limits that do not depend on framing, the sendfile path's errors, and the
compatibility corrections (policy ``url``, one boolean parser, an unknown ``key``)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from tests.reliability import rawhttp
from tests.reliability.checks import TOTALS
from tests.reliability.hostile import Live, MiB, live, refused
from tests.reliability.rawhttp import query

__all__ = ["live"]  # the module-scoped server fixture
JSON = [(b"Content-Type", b"application/json")]


RANGE_CASES = [
    ("items=0-3", 200, b"0123456789"),
    ("Bytes=0-3", 206, b"0123"),
    ("BYTES=-2", 206, b"89"),
    ("bytes=0-1,4-5", 200, b"0123456789"),
    ("bytes=0-1, 4-", 200, b"0123456789"),
    ("none", 200, b"0123456789"),
]


@pytest.mark.parametrize(("header", "status", "body"), RANGE_CASES)
def test_ranges_follow_rfc_9110_on_both_origins(
    live: Live, header: str, status: int, body: bytes
) -> None:
    """5: unknown unit ignored, unit case-insensitive, several ranges get the whole file."""
    handle = live.store(b"0123456789")["handle"]
    for port, path in ((live.port, f"/api/file/{handle}"), (live.server.cdn_port, f"/{handle}")):
        TOTALS.inputs_tried += 1
        answer = rawhttp.request(port, "GET", path, [("Range", header)])
        assert (answer.status, answer.body) == (status, body), (port, answer)


@pytest.mark.parametrize("header", ["bytes=10-", "bytes=5-2", "bytes=x-y", "Bytes=-0"])
def test_416_is_json_with_the_size(live: Live, header: str) -> None:
    handle = live.store(b"0123456789")["handle"]
    for port, path in ((live.port, f"/api/file/{handle}"), (live.server.cdn_port, f"/{handle}")):
        answer = rawhttp.request(port, "GET", path, [("Range", header)])
        body = refused(answer, 416)
        assert body["error"]["code"] == "RANGE_NOT_SATISFIABLE"
        assert answer.headers["content-range"] == "bytes */10"


def test_a_file_where_a_folder_is_needed_is_a_409(live: Live) -> None:
    """6: a/file is a file; a/file/sub is a conflict (409), as the reverse already was."""
    live.store(b"file", path="c6/file")
    rows = live.rows()
    target = f"/api/store/S3?{query(key=live.key, path='c6/file/sub')}"
    body = refused(rawhttp.request(live.port, "POST", target, body=b"x"), 409)
    assert body["error"]["code"] == "KEY_IN_USE"
    live.store(b"deep", path="c6/dir/sub")
    target = f"/api/store/S3?{query(key=live.key, path='c6/dir')}"
    refused(rawhttp.request(live.port, "POST", target, body=b"x"), 409)
    assert live.rows() == rows + 1


def test_a_link_to_a_folder_is_refused(live: Live) -> None:
    """6: a link must point at an object, not a folder."""
    live.store(b"deep", path="c6l/folder/sub")
    rows = live.rows()
    target = f"/api/store/S3?{query(key=live.key, path='c6l/folder', link='true')}"
    refused(rawhttp.request(live.port, "POST", target), 404)
    assert live.rows() == rows


@pytest.mark.parametrize("chunked", [False, True])
def test_the_cap_applies_to_decoded_bytes_whatever_the_framing(live: Live, chunked: bool) -> None:
    """7: max_upload_bytes (1 MiB here) bounds the stored bytes, base64 or not, with
    Content-Length or chunked."""
    target = f"/api/store/S3?{query(key=live.key, base64decode='true')}"
    exact = base64.b64encode(b"\x07" * MiB)
    answer = rawhttp.request(live.port, "POST", target, body=exact, chunked=chunked)
    assert answer.status == 200, answer.body
    assert answer.json()["size"] == MiB
    rows = live.rows()
    over = base64.b64encode(b"\x07" * (MiB + 1))
    refused(rawhttp.request(live.port, "POST", target, body=over, chunked=chunked), 413)
    plain = f"/api/store/S3?{query(key=live.key)}"
    refused(
        rawhttp.request(live.port, "POST", plain, body=b"\x07" * (MiB + 1), chunked=chunked), 413
    )
    assert live.rows() == rows


@pytest.mark.parametrize("size", [-1, "-5", 1.5, "3.0", "ten", True, None, MiB + 1, "1e3", " "])
def test_multipart_start_validates_size(live: Live, size: Any) -> None:
    """7: negative, non-integer and over-the-cap sizes are refused."""
    fields = {"apikey": live.key, "filename": "a.txt", "mimetype": "text/plain", "size": size}
    body = json.dumps(fields).encode()
    refused(rawhttp.request(live.port, "POST", "/multipart/start", JSON, body), 400, 413)


def test_a_policy_url_restriction_does_not_bind_calls_on_a_handle(live: Live) -> None:
    """Compatibility: Filestack's `url` restricts URL sources and processing only; a remove
    (or read, stat) with such a policy works, a store from another url is refused."""
    handle = live.store(b"to remove")["handle"]
    policy = live.policy(call=["remove", "read", "stat"], url="https://ok\\.example/.*")
    answer = rawhttp.request(live.port, "GET", f"/api/file/{handle}?{query(**policy)}")
    assert answer.status == 200 and answer.body == b"to remove"
    answer = rawhttp.request(live.port, "GET", f"/api/file/{handle}/metadata?{query(**policy)}")
    assert answer.status == 200
    answer = rawhttp.request(live.port, "DELETE", f"/api/file/{handle}?{query(**policy)}")
    assert answer.status == 200, answer.body
    store = live.policy(call=["store"], url="https://ok\\.example/.*")
    target = f"/api/store/S3?{query(key=live.key, **store)}"
    form = [("Content-Type", "application/x-www-form-urlencoded")]
    answer = rawhttp.request(live.port, "POST", target, form, b"url=http%3A%2F%2F127.0.0.1%3A1%2F")
    assert refused(answer, 403)["error"]["code"] == "POLICY_DENIED"


@pytest.mark.parametrize(
    ("word", "control"),
    [
        ("off", "no-store"),
        ("no", "no-store"),
        ("FALSE", "no-store"),
        ("0", "no-store"),
        ("on", "private, no-cache"),
    ],
)
def test_cache_uses_the_one_boolean_parser(live: Live, word: str, control: str) -> None:
    """Compatibility: `cache=off` is false, as the OpenAPI document says."""
    handle = live.store(b"cached?")["handle"]
    answer = rawhttp.request(live.port, "GET", f"/api/file/{handle}?cache={word}")
    assert answer.status == 200 and answer.headers["cache-control"] == control


@pytest.mark.parametrize(
    ("target", "body"),
    [
        ("/api/file/{h}?cache=maybe", b""),
        ("/api/file/{h}?dl=2", b""),
        ("/api/store/S3?key={k}&base64decode=sure", b"eA=="),
    ],
)
def test_a_word_that_is_no_boolean_is_a_400(live: Live, target: str, body: bytes) -> None:
    handle = live.store(b"x")["handle"]
    rows = live.rows()
    method = "POST" if body else "GET"
    answer = rawhttp.request(live.port, method, target.format(h=handle, k=live.key), body=body)
    assert refused(answer, 400)["error"]["details"]["parameter"] in ("cache", "dl", "base64decode")
    assert live.rows() == rows


def test_fii_uses_the_one_boolean_parser(live: Live) -> None:
    fields = {"apikey": live.key, "filename": "a", "mimetype": "text/plain", "size": 3}
    for word, expected in (("off", False), ("yes", True)):
        body = json.dumps({**fields, "fii": word}).encode()
        answer = rawhttp.request(live.port, "POST", "/multipart/start", JSON, body)
        assert answer.status == 200, answer.body
        assert ("upload_type" in answer.json()) is expected
    body = json.dumps({**fields, "fii": "perhaps"}).encode()
    refused(rawhttp.request(live.port, "POST", "/multipart/start", JSON, body), 400)


def test_a_key_that_names_no_app_is_its_own_4xx(live: Live) -> None:
    """Compatibility: an unknown key is 400 UNKNOWN_API_KEY (not a 404 for a file that
    exists); `key=true` on metadata is the SDK asking for the key field."""
    handle = live.store(b"keyed")["handle"]
    for path in (f"/api/file/{handle}", f"/api/file/{handle}/metadata"):
        answer = rawhttp.request(live.port, "GET", f"{path}?key=nosuchappkey000000001")
        assert refused(answer, 400)["error"]["code"] == "UNKNOWN_API_KEY"
    answer = rawhttp.request(live.port, "GET", f"/api/file/{handle}/metadata?key=true")
    assert answer.status == 200 and "key" in answer.json(), answer.body
    other, _ = live.server.create_app()
    answer = rawhttp.request(live.port, "GET", f"/api/file/{handle}?key={other}")
    assert refused(answer, 404)["error"]["code"] == "HANDLE_NOT_FOUND"
    answer = rawhttp.request(live.port, "GET", f"/api/file/{handle}?key={live.key}")
    assert answer.status == 200 and answer.body == b"keyed"


@pytest.mark.parametrize(
    "header",
    [("If-Match", '"nope"'), ("If-Unmodified-Since", "Thu, 01 Jan 1970 00:00:00 GMT")],
)
def test_a_failed_precondition_on_a_download_is_json(live: Live, header: tuple[str, str]) -> None:
    """8: aiohttp's sendfile answered 412 with an empty text/plain body."""
    handle = live.store(b"conditional")["handle"]
    for port, path in ((live.port, f"/api/file/{handle}"), (live.server.cdn_port, f"/{handle}")):
        body = refused(rawhttp.request(port, "GET", path, [header]), 412)
        assert body["error"]["code"] == "PRECONDITION_FAILED"
