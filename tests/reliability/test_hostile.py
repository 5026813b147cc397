"""Issue 13: hostile input against a real ``stowage serve``, byte for byte (rawhttp).

Each test names the defect class it covers; each failed before the fix. Every refused
input must be a JSON 4xx in the one error shape, store nothing, and leave the file stored
before it downloadable, whole, on both origins.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import gzip
import json
import re
import socket
import sqlite3
import threading
import time

import aiohttp
import pytest

from stowage.core.security import sign
from tests.reliability import rawhttp
from tests.reliability.hostile import Live, live, refused, still_readable
from tests.reliability.rawhttp import query

__all__ = ["live"]  # the module-scoped server fixture


BAD_TYPES = [
    "text/plain\r\nX-Evil: 1",
    "text/plain\x00",
    "text/plain\x7f",
    "text/plain\x0b",
    "text/\udcffplain",
    "text/plain\n",
    "",  # after stripping: not a media type
    "x" * 300,
]


@pytest.mark.parametrize("mimetype", BAD_TYPES[:-2] + BAD_TYPES[-1:])
def test_header_bound_values_are_refused_on_every_entry_point(live: Live, mimetype: str) -> None:
    """1: a mimetype that could not travel back as a header is refused wherever it enters."""
    before = live.rows()
    stored = live.store(b"version 1")
    handle = stored["handle"]
    rows = before + 1
    attempts = [
        ("POST", f"/api/store/S3?{query(key=live.key, mimetype=mimetype)}", [], b"x"),
        ("POST", f"/api/store/S3/{handle}?{query(key=live.key, mimetype=mimetype)}", [], b""),
        (
            "POST",
            f"/api/store/S3?{query(key=live.key, mimetype=mimetype)}",
            [("Content-Type", "application/x-www-form-urlencoded")],
            b"url=http%3A%2F%2F127.0.0.1%3A1%2Fx",
        ),
        (
            "POST",
            "/multipart/start",
            [("Content-Type", "application/json")],
            json.dumps(
                {"apikey": live.key, "filename": "a", "mimetype": mimetype, "size": 3}
            ).encode("utf-8", "surrogatepass"),
        ),
    ]
    for method, target, headers, body in attempts:
        refused(rawhttp.request(live.port, method, target, headers, body), 400)
    assert live.rows() == rows
    still_readable(live, handle, b"version 1")


@pytest.mark.parametrize(
    "ctype", [b"text/\xff\xfe", b"text/plain\x0b", b"text/plain; a=\x01", b"\xc3(/x"]
)
def test_bad_content_type_bytes_are_a_400_on_store_overwrite_and_parts(
    live: Live, ctype: bytes
) -> None:
    """1 and 2: a Content-Type that is no media type or no UTF-8, on the raw store, the
    overwrite, and a multipart part's header."""
    stored = live.store(b"version 1")
    rows = live.rows()
    target = f"/api/store/S3?{query(key=live.key)}"
    refused(rawhttp.request(live.port, "POST", target, [(b"Content-Type", ctype)], b"new"), 400)
    overwrite = f"/api/file/{stored['handle']}"
    answer = rawhttp.request(
        live.port, "POST", overwrite, [(b"Content-Type", ctype), live.auth()], b"version 2"
    )
    refused(answer, 400)
    part = (
        b'--B\r\nContent-Disposition: form-data; name="fileUpload"; filename="a.txt"\r\n'
        b"Content-Type: " + ctype + b"\r\n\r\nnew bytes\r\n--B--\r\n"
    )
    multipart = [(b"Content-Type", b"multipart/form-data; boundary=B")]
    refused(rawhttp.request(live.port, "POST", target, multipart, part), 400)
    assert live.rows() == rows
    still_readable(live, stored["handle"], b"version 1")


def test_a_row_stored_before_the_checks_is_still_served(live: Live) -> None:
    """1, defence in depth: whatever a row holds, the download answers on both origins."""
    stored = live.store(b"legacy bytes")
    db = sqlite3.connect(live.server.data_dir / "stowage.db")
    try:
        db.execute(
            "UPDATE files SET mimetype = ?, filename = ? WHERE handle = ?",
            ("text/plain\r\nX-Evil: 1\x00\x7f", "a\r\nb\x00\x7f.txt", stored["handle"]),
        )
        db.commit()
    finally:
        db.close()
    for cdn in (False, True):
        answer = live.download(stored["handle"], cdn=cdn)
        assert answer.status == 200 and answer.body == b"legacy bytes", answer
        assert "x-evil" not in answer.headers
        assert answer.headers["content-type"] == "application/octet-stream"


MULTIPART_ENDPOINTS = [
    "/multipart/start",
    "/multipart/upload",
    "/multipart/commit",
    "/multipart/complete",
    "/process",
]
JSON = [(b"Content-Type", b"application/json")]


@pytest.mark.parametrize("endpoint", MULTIPART_ENDPOINTS)
def test_deep_nesting_is_a_400_on_every_json_endpoint(live: Live, endpoint: str) -> None:
    """2: 100,000 nested ``[`` (and ``{"a":`` ...) never reach the parser's recursion."""
    rows = live.rows()
    for body in (b"[" * 100_000, b'{"a":' * 50_000, b'{"apikey": ' + b"[" * 100_000):
        refused(rawhttp.request(live.port, "POST", endpoint, JSON, body), 400)
    assert live.rows() == rows


@pytest.mark.parametrize("endpoint", MULTIPART_ENDPOINTS)
@pytest.mark.parametrize(
    "field", ["apikey", "mimetype", "filename", "upload_id", "policy", "signature", "handle"]
)
def test_lone_surrogates_in_json_are_a_400(live: Live, endpoint: str, field: str) -> None:
    """2: ``"\\udcff"`` in any field, top-level or nested (a policy's handle)."""
    rows = live.rows()
    fields = {"apikey": live.key, "filename": "a", "size": 3, "upload_id": "u" * 32, "part": 1}
    fields[field] = "a\\udcffb"
    body = json.dumps(fields).replace("a\\\\udcffb", "a\\udcffb").encode()
    refused(rawhttp.request(live.port, "POST", endpoint, JSON, body), 400)
    nested = json.dumps({"apikey": live.key, "sources": ["x"], "tasks": {"k": "\\udcff"}})
    refused(rawhttp.request(live.port, "POST", endpoint, JSON, nested.encode()), 400)
    assert live.rows() == rows


@pytest.mark.parametrize("endpoint", MULTIPART_ENDPOINTS)
def test_non_utf8_json_is_a_400(live: Live, endpoint: str) -> None:
    refused(rawhttp.request(live.port, "POST", endpoint, JSON, b'{"apikey": "\xff\xfe"}'), 400)


def test_gzip_that_is_not_gzip_is_a_400_and_the_old_version_stays(live: Live) -> None:
    """2: Content-Encoding: gzip with bytes that are not gzip, on store and overwrite."""
    stored = live.store(b"version 1")
    rows = live.rows()
    gz = (b"Content-Encoding", b"gzip")
    for chunked in (False, True):
        target = f"/api/store/S3?{query(key=live.key)}"
        answer = rawhttp.request(live.port, "POST", target, [gz], b"not gzip", chunked=chunked)
        refused(answer, 400)
        over = f"/api/file/{stored['handle']}"
        answer = rawhttp.request(
            live.port, "POST", over, [gz, live.auth()], b"not gzip", chunked=chunked
        )
        refused(answer, 400)
    assert live.rows() == rows
    still_readable(live, stored["handle"], b"version 1")
    real = gzip.compress(b"gzipped bytes")  # real gzip is still decoded and stored
    target = f"/api/store/S3?{query(key=live.key)}"
    ok = rawhttp.request(live.port, "POST", target, [gz], real)
    assert ok.status == 200, ok.body
    still_readable(live, ok.json()["handle"], b"gzipped bytes")


def test_a_pathological_policy_pattern_cannot_stall_other_requests(live: Live) -> None:
    """3: ``(a+)+b`` against a long path ran for seconds on the loop with ``re``; with RE2
    a concurrent /healthz is never delayed by more than half a second (backtracking on a
    40-character path would take hours; the bound leaves room for a busy CI machine)."""
    policy = live.policy(call=["store"], path="(a+)+b", container="(x+x+)+y")
    target = f"/api/store/S3?{query(key=live.key, path='a' * 40, **policy)}"
    errors_seen: list[int] = []

    def attack() -> None:
        for _ in range(5):
            errors_seen.append(rawhttp.request(live.port, "POST", target, body=b"x").status)

    threads = [threading.Thread(target=attack) for _ in range(3)]
    for thread in threads:
        thread.start()
    worst = 0.0
    while any(t.is_alive() for t in threads):
        started = time.monotonic()
        assert rawhttp.request(live.port, "GET", "/healthz").status == 200
        worst = max(worst, time.monotonic() - started)
    for thread in threads:
        thread.join()
    assert errors_seen and set(errors_seen) == {403}, errors_seen
    assert worst < 0.5, worst


@pytest.mark.parametrize(
    ("pattern", "code"),
    [("(a)\\1", "INVALID_POLICY_PATTERN"), ("(?=a)a", "INVALID_POLICY_PATTERN")],
)
def test_a_policy_re2_cannot_compile_is_a_clear_400(live: Live, pattern: str, code: str) -> None:
    policy = live.policy(call=["store"], path=pattern)
    target = f"/api/store/S3?{query(key=live.key, path='aa', **policy)}"
    body = refused(rawhttp.request(live.port, "POST", target, body=b"x"), 400)
    assert body["error"]["code"] == code


LONG = "a" * 9000
PROTOCOL_CASES = {
    "url over the limit": (
        b"GET /api/file/x?signature=" + b"s" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
        414,
        "URI_TOO_LONG",
    ),
    "absolute-form url over the limit": (
        b"GET http://x/?signature=" + b"s" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
        414,
        "URI_TOO_LONG",
    ),
    "header over the limit": (
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"h" * 9000 + b"\r\n\r\n",
        431,
        "HEADERS_TOO_LARGE",
    ),
    "too many headers": (
        b"GET /healthz HTTP/1.1\r\nHost: x\r\n"
        + b"".join(b"X-%d: 1\r\n" % i for i in range(200))
        + b"\r\n",
        431,
        "HEADERS_TOO_LARGE",
    ),
    "bad chunk size": (
        b"POST /api/store/S3?key=k HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"zz\r\nabc\r\n0\r\n\r\n",
        400,
        None,
    ),
    "brotli": (
        b"POST /api/store/S3?key=k HTTP/1.1\r\nHost: x\r\nContent-Encoding: br\r\n"
        b"Content-Length: 3\r\n\r\nabc",
        415,
        "UNSUPPORTED_CONTENT_ENCODING",
    ),
    "bad request line": (b"GET\x01 / HTTP/1.1\r\nHost: x\r\n\r\n", 400, "MALFORMED_REQUEST"),
    "not http": (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 400, None),
    "header with a bare LF value": (
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n",
        400,
        None,
    ),
}


@pytest.mark.parametrize("case", list(PROTOCOL_CASES))
def test_protocol_errors_are_in_the_error_shape(live: Live, case: str) -> None:
    """4: what aiohttp's parser refuses is answered as JSON with a stable code, on both
    origins, and the signature in an over-long line never reaches the log."""
    raw, status, code = PROTOCOL_CASES[case]
    for port in (live.port, live.server.cdn_port):
        body = refused(rawhttp.request(port, "GET", "/", raw=raw), status)
        if code is not None:
            assert body["error"]["code"] == code
        assert "Brotli" not in json.dumps(body)
    log = live.server.log.read_text(errors="replace")
    assert "signature=" not in log and "sssssssss" not in log
    assert "Traceback" not in log


def head_cases(handle: str) -> dict[str, tuple[bytes, bytes, int]]:
    """Request line and head of a request aiohttp's parser refuses, by the method put in
    front: the line, what follows it, the status."""
    host = b"\r\nHost: x"
    return {
        "request line too long": (b" /" + b"flip/" * 3000 + handle.encode(), host, 414),
        "headers too large": (b" /" + handle.encode(), host + b"\r\nX-Big: " + b"h" * 9000, 431),
        "too many headers": (
            b" /" + handle.encode(),
            host + b"".join(b"\r\nX-%d: 1" % i for i in range(200)),
            431,
        ),
        "malformed request": (b" /" + handle.encode(), host + b"\r\nX-A: a\x00b", 400),
    }


def exchange(port: int, data: bytes, before: bytes = b"") -> tuple[bytes, bytes]:
    """Head and every byte after it of the answer to ``data`` (on a connection that first
    asked ``before`` and read its whole answer: a keep-alive connection's next message)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        if before:
            sock.sendall(before)
            assert rawhttp.parse(_read_answer(sock)).status in (200, 404)  # per origin
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(data)
        received = bytearray()
        while chunk := _recv(sock):
            received += chunk
    head, sep, rest = bytes(received).partition(b"\r\n\r\n")
    assert sep, received[:200]
    return head, rest


def _recv(sock: socket.socket) -> bytes:
    try:
        return sock.recv(65536)
    except ConnectionResetError:
        return b""


def _read_answer(sock: socket.socket) -> bytes:
    """One whole answer with a Content-Length, the connection left open."""
    data = bytearray()
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, rest = bytes(data).partition(b"\r\n\r\n")
    length = int(re.search(rb"(?i)content-length: *([0-9]+)", head).group(1))  # type: ignore[union-attr]
    while len(rest) < length:
        rest += sock.recv(65536)
    return head + b"\r\n\r\n" + rest


def _headers(head: bytes) -> dict[str, str]:
    lines = head.decode("latin-1").split("\r\n")[1:]
    found = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    found.pop("date", None)
    return found


@pytest.mark.parametrize(
    "case", ["request line too long", "headers too large", "too many headers", "malformed request"]
)
@pytest.mark.parametrize("keep_alive", [False, True], ids=["first", "after a request"])
def test_a_head_the_parser_refuses_is_answered_without_a_body(
    live: Live, case: str, keep_alive: bool
) -> None:
    """A HEAD refused below the application got the JSON body after its headers (aiohttp
    hands the error handler a stand-in GET): a client then reads those bytes as garbage.
    The HEAD gets the GET's status and headers and no body; the GET keeps its body."""
    line, rest, status = head_cases(live.sentinel)[case]
    ask = f"GET /{live.sentinel} HTTP/1.1\r\nHost: x\r\n\r\n".encode() if keep_alive else b""
    for port in (live.port, live.server.cdn_port):
        get_head, get_body = exchange(port, b"GET" + line + b" HTTP/1.1" + rest + b"\r\n\r\n", ask)
        head, body = exchange(port, b"HEAD" + line + b" HTTP/1.1" + rest + b"\r\n\r\n", ask)
        assert head.split(b" ")[1] == get_head.split(b" ")[1] == b"%d" % status, head[:80]
        assert body == b"", body[:200]
        assert json.loads(get_body)["error"]["code"]
        assert _headers(head) == _headers(get_head)
        assert int(_headers(head)["content-length"]) == len(get_body)


def test_an_http_client_reads_the_refused_head(live: Live) -> None:
    """aiohttp's client failed on the bytes after the headers ("Data after Connection:
    close")."""

    async def ask() -> int:
        url = f"http://127.0.0.1:{live.server.cdn_port}/{'flip/' * 3000}{live.sentinel}"
        async with aiohttp.ClientSession() as session, session.head(url) as resp:
            await resp.read()
            return resp.status

    assert asyncio.run(ask()) == 414


def test_refused_requests_reach_the_access_log_and_the_metrics(live: Live) -> None:
    raw = PROTOCOL_CASES["url over the limit"][0]
    refused(rawhttp.request(live.port, "GET", "/", raw=raw), 414)
    metrics = rawhttp.request(live.port, "GET", "/metrics").body.decode()
    assert 'status="414"' in metrics
    log = live.server.log.read_text(errors="replace")
    assert " 414 " in log  # the access log line, without the path's query
    assert all("?" not in line for line in log.splitlines() if "aiohttp.access" in line)


@pytest.mark.parametrize("field", ["handle", "path", "url", "container", "call"])
def test_a_lone_surrogate_inside_a_policy_is_a_4xx(live: Live, field: str) -> None:
    """2: a policy whose JSON holds ``"\\udcff"`` (in its handle, a pattern, a call)."""
    expiry = int(time.time()) + 600
    text = f'{{"expiry": {expiry}, "{field}": "a\\udcffb"}}'
    encoded = base64.urlsafe_b64encode(text.encode()).decode()
    creds = {"policy": encoded, "signature": sign(live.secret, encoded)}
    rows = live.rows()
    for method, target in (
        ("GET", f"/api/file/{live.sentinel}?{query(**creds)}"),
        ("GET", f"/api/file/{live.sentinel}/metadata?{query(**creds)}"),
        ("POST", f"/api/store/S3?{query(key=live.key, path='p', **creds)}"),
    ):
        body = refused(rawhttp.request(live.port, method, target, body=b"x"), 403)
        assert body["error"]["code"] == "INVALID_POLICY"
    assert live.rows() == rows
    still_readable(live, live.sentinel, b"the sentinel stays readable")


NUMBERISH = ["\u00b3", "\u0661\u0662", "\uff11", "1e3", "+1", "1_0"]


@pytest.mark.parametrize("value", NUMBERISH)
def test_numbers_that_are_no_ascii_integers_are_a_4xx(live: Live, value: str) -> None:
    """2: ``"\u00b3".isdigit()`` is true and ``int()`` refuses it; ``int()`` takes Arabic-Indic
    digits. Sizes, offsets, part numbers and CDN expiries accept ASCII digits only (a CDN
    task's number may have a sign or an exponent: ``expiry:+1`` is 1, ``1e3`` 1000)."""
    part = f"/multipart/part/{'u' * 32}/1?{query(size=value)}"
    refused(rawhttp.request(live.port, "PUT", part, body=b"abc"))
    cdn = f"/cache=expiry:{rawhttp.q(value)}/{live.sentinel}"
    if value in ("+1", "1e3"):  # a CDN task's number as a program prints one (decisions)
        assert rawhttp.request(live.server.cdn_port, "GET", cdn).status == 200
    else:
        refused(rawhttp.request(live.server.cdn_port, "GET", cdn), 400)
    cases = [("/multipart/start", "size"), *(("/multipart/upload", f) for f in ("size", "part"))]
    for endpoint, field in cases:
        fields = {"apikey": live.key, "filename": "a", "size": 3, "part": 1, "upload_id": "u" * 32}
        fields[field] = value
        body = json.dumps(fields).encode()
        refused(rawhttp.request(live.port, "POST", endpoint, JSON, body))
