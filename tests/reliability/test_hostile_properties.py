"""Issue 13, generated inputs: arbitrary bytes, control characters, invalid UTF-8, lone
surrogates and deep nesting in every parameter, header and JSON field of every endpoint,
sent byte for byte to a real ``stowage serve``.

Whatever the input, the answer is never a 5xx and never a closed connection; a 4xx is in
the error shape and stores nothing; an accepted store (a filename is repaired, not
refused) downloads on both origins; the file stored first stays whole. Bounded and
deterministic (``derandomize``): a few hundred requests, seconds in CI.
"""

from __future__ import annotations

import json
import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.reliability import rawhttp
from tests.reliability.checks import TOTALS
from tests.reliability.hostile import Live, live, still_readable
from tests.reliability.rawhttp import Answer, q

__all__ = ["live"]

# CI runs 60 per property (seconds); STOWAGE_HOSTILE_EXAMPLES=2000 for a deeper local hunt.
BOUNDED = settings(
    max_examples=int(os.environ.get("STOWAGE_HOSTILE_EXAMPLES", "60")),
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)

# One character a header, a path or a stored name must never carry as it is.
_HOSTILE_CHAR = st.one_of(
    st.characters(min_codepoint=0, max_codepoint=0x1F),
    st.just("\x7f"),
    st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),  # lone surrogates
    st.sampled_from(["\u202e", "\ufeff", "\r\n", "%", "\\", "/..", "\udcff"]),
)
HOSTILE_TEXT = st.builds(
    lambda a, c, b: a + c + b, st.text(max_size=12), _HOSTILE_CHAR, st.text(max_size=12)
)
INVALID_UTF8 = st.builds(
    lambda a, c, b: a + c + b,
    st.binary(max_size=12),
    st.sampled_from([b"\xff", b"\xc3(", b"\xed\xb3\xbf", b"\xe2\x82", b"\x80", b"\xf8\x88"]),
    st.binary(max_size=12),
)
# Whole values that pass str.isdigit() or look like numbers, yet are no ASCII integers.
NUMBERISH = st.sampled_from(["\u00b3", "\u0661\u0662", "\uff11", "-1", "1e3", " 1", "+1", "1_0"])
HOSTILE_VALUE = st.one_of(HOSTILE_TEXT, INVALID_UTF8, st.binary(max_size=40), NUMBERISH)


def _raw(value: str | bytes) -> bytes:
    return value.encode("utf-8", "surrogatepass") if isinstance(value, str) else value


def answered(answer: Answer) -> None:
    """Never a 5xx; a 4xx is the error shape."""
    TOTALS.inputs_tried += 1
    if answer.status >= 500:
        TOTALS.client_errors_answered_5xx += 1
    assert answer.status < 500, (answer.status, answer.body)
    if answer.status >= 400:
        assert answer.is_error_shape, (answer.status, answer.headers, answer.body)


def after_store(live: Live, answer: Answer, rows: int, data: bytes) -> None:
    """Refused: nothing stored. Accepted: the new file downloads, whole, on both origins."""
    answered(answer)
    if answer.status >= 300:
        assert live.rows() == rows, "a refused store left a row"
        return
    stored = answer.json()
    if "handle" in stored:
        # base64decode=<a true word> stores the decoded bytes: check those, whatever they are
        expected = data if stored.get("size") == len(data) else live.download(stored["handle"]).body
        assert len(expected) == stored["size"]
        still_readable(live, stored["handle"], expected)


STORE_PARAMS = ["filename", "mimetype", "path", "container", "access", "base64decode", "link"]
READ_PARAMS = ["key", "dl", "cache", "verify", "policy", "signature"]


@BOUNDED
@given(name=st.sampled_from([*STORE_PARAMS, "key", "policy", "signature"]), value=HOSTILE_VALUE)
def test_any_store_parameter(live: Live, name: str, value: str | bytes) -> None:
    rows = live.rows()
    params = {"key": live.key, name: _raw(value)}
    target = "/api/store/S3?" + "&".join(f"{k}={q(v)}" for k, v in params.items())
    after_store(live, rawhttp.request(live.port, "POST", target, body=b"payload"), rows, b"payload")
    still_readable(live, live.sentinel, b"the sentinel stays readable")


@BOUNDED
@given(name=st.sampled_from(READ_PARAMS), value=HOSTILE_VALUE, cdn=st.booleans())
def test_any_read_parameter(live: Live, name: str, value: str | bytes, cdn: bool) -> None:
    port = live.server.cdn_port if cdn else live.port
    for path in (f"/api/file/{live.sentinel}", f"/api/file/{live.sentinel}/metadata"):
        path = path.removeprefix("/api/file") if cdn else path
        answer = rawhttp.request(port, "GET", f"{path}?{name}={q(_raw(value))}")
        answered(answer)
    still_readable(live, live.sentinel, b"the sentinel stays readable")


@BOUNDED
@given(
    value=HOSTILE_VALUE,
    where=st.sampled_from(["handle", "provider", "cdn", "cache", "security", "part"]),
)
def test_any_path_segment(live: Live, value: str | bytes, where: str) -> None:
    segment = q(_raw(value))
    target, port = {
        "handle": (f"/api/file/{segment}", live.port),
        "provider": (f"/api/store/{segment}?key={live.key}", live.port),
        "cdn": (f"/{segment}/{live.sentinel}", live.server.cdn_port),
        "cache": (f"/cache=expiry:{segment}/{live.sentinel}", live.server.cdn_port),
        "security": (f"/security=p:{segment},s:{segment}/{live.sentinel}", live.server.cdn_port),
        "part": (f"/multipart/part/{'u' * 32}/1?size={segment}", live.port),
    }[where]
    method = {"provider": "POST", "part": "PUT"}.get(where, "GET")
    answered(rawhttp.request(port, method, target, body=b"" if method == "GET" else b"x"))


HEADERS = [
    "Content-Type",
    "Authorization",
    "Range",
    "If-Match",
    "If-None-Match",
    "If-Range",
    "Content-MD5",
    "X-Content-SHA256",
    "Expect",
    "Content-Encoding",
    "X-Request-Id",
    "Origin",
    "Accept-Encoding",
]


@BOUNDED
@given(
    header=st.sampled_from(HEADERS),
    value=st.binary(max_size=60).map(lambda b: b.replace(b"\r", b"").replace(b"\n", b"")),
    op=st.sampled_from(["store", "overwrite", "download", "cdn", "start"]),
)
def test_any_header_value(live: Live, header: str, value: bytes, op: str) -> None:
    """Arbitrary bytes (all but CR and LF, which frame the message) in a header's value."""
    rows = live.rows()
    scratch = live.store(b"scratch v1")["handle"]
    rows += 1
    headers: list[tuple[bytes | str, bytes | str]] = [(header, value)]
    if op == "store":
        target = f"/api/store/S3?key={live.key}"
        after_store(live, rawhttp.request(live.port, "POST", target, headers, b"v2"), rows, b"v2")
    elif op == "overwrite":
        if header != "Authorization":
            headers.append(live.auth())
        answer = rawhttp.request(live.port, "POST", f"/api/file/{scratch}", headers, b"v2")
        answered(answer)
        expected = b"v2" if answer.status == 200 else b"scratch v1"
        still_readable(live, scratch, expected)
    elif op in ("download", "cdn"):
        port = live.server.cdn_port if op == "cdn" else live.port
        path = f"/{scratch}" if op == "cdn" else f"/api/file/{scratch}"
        answered(rawhttp.request(port, "GET", path, headers))
    else:
        body = json.dumps({"apikey": live.key, "filename": "a", "size": 3}).encode()
        if header != "Content-Type":
            headers.append(("Content-Type", "application/json"))
        answered(rawhttp.request(live.port, "POST", "/multipart/start", headers, body))
    still_readable(live, live.sentinel, b"the sentinel stays readable")


def _nested(depth: int, leaf: str, kind: str) -> str:
    """JSON text nested ``depth`` deep, written out (json.dumps itself would recurse)."""
    if kind == "list":
        return "[" * depth + leaf + "]" * depth
    return '{"a":' * depth + leaf + "}" * depth


JSON_LEAF = st.one_of(
    HOSTILE_TEXT,
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
    st.lists(st.text(max_size=5), max_size=3),
)
JSON_TEXT = JSON_LEAF.map(json.dumps)  # ensure_ascii: a surrogate travels as \\udcff
JSON_VALUE = st.one_of(
    JSON_TEXT,
    st.builds(
        _nested,
        st.integers(min_value=1, max_value=100_000),
        JSON_TEXT,
        st.sampled_from(["list", "object"]),
    ),
)
JSON_FIELDS = [
    "apikey",
    "filename",
    "mimetype",
    "size",
    "upload_id",
    "part",
    "md5",
    "offset",
    "parts",
    "policy",
    "signature",
    "store",
    "fii",
    "upload_tags",
    "sources",
    "tasks",
]
JSON_ENDPOINTS = [
    "/multipart/start",
    "/multipart/upload",
    "/multipart/commit",
    "/multipart/complete",
    "/process",
]


@BOUNDED
@given(
    endpoint=st.sampled_from(JSON_ENDPOINTS), field=st.sampled_from(JSON_FIELDS), value=JSON_VALUE
)
def test_any_json_field(live: Live, endpoint: str, field: str, value: str) -> None:
    rows = live.rows()
    fields: dict[str, Any] = {"apikey": live.key, "filename": "a.txt", "size": 3, "part": 1}
    fields.pop(field, None)
    body = (json.dumps(fields)[:-1] + f", {json.dumps(field)}: {value}}}").encode()
    headers: list[tuple[bytes | str, bytes | str]] = [("Content-Type", "application/json")]
    answer = rawhttp.request(live.port, "POST", endpoint, headers, body)
    answered(answer)
    if endpoint != "/multipart/start" and answer.status >= 400:
        assert live.rows() == rows


@BOUNDED
@given(
    ctype=HOSTILE_VALUE,
    filename=HOSTILE_VALUE,
    name=st.sampled_from([b"fileUpload", b"url", b"other"]),
)
def test_any_multipart_part_header(
    live: Live, ctype: str | bytes, filename: str | bytes, name: bytes
) -> None:
    rows = live.rows()
    clean = _raw(filename).replace(b"\r", b"").replace(b"\n", b"").replace(b'"', b"")
    ctype_raw = _raw(ctype).replace(b"\r", b"").replace(b"\n", b"")
    body = (
        b'--B\r\nContent-Disposition: form-data; name="'
        + name
        + b'"; filename="'
        + clean
        + b'"\r\nContent-Type: '
        + ctype_raw
        + b"\r\n\r\npart bytes\r\n--B--\r\n"
    )
    headers: list[tuple[bytes | str, bytes | str]] = [
        ("Content-Type", "multipart/form-data; boundary=B")
    ]
    answer = rawhttp.request(live.port, "POST", f"/api/store/S3?key={live.key}", headers, body)
    if name == b"url":
        answered(answer)  # a url that is no url: a 4xx (or the fetch's own 502, not ours)
        return
    after_store(live, answer, rows, b"part bytes")


# Every other endpoint's query parameters: (method, path, parameter names, body).
ENDPOINTS = [
    ("POST", "/api/store/S3/{scratch}", ["key", *STORE_PARAMS], b""),
    ("POST", "/api/file/{scratch}", ["key", "base64decode", "policy", "signature"], b"dg=="),
    ("DELETE", "/api/file/{scratch}", ["key", "skip_storage", "policy", "signature"], b""),
    ("POST", "/api/file/{scratch}/remove", ["key", "skip_storage"], b""),
    ("GET", "/api/files", ["key", "after", "limit", "policy", "signature"], b""),
    ("PUT", "/multipart/part/{upload_id}/1", ["size", "md5", "offset", "expires", "sig"], b"abc"),
    ("POST", "/multipart/start", ["apikey", "filename", "mimetype", "size", "fii"], b""),
    ("POST", "/multipart/upload", ["apikey", "upload_id", "part", "size", "md5"], b""),
    ("POST", "/multipart/complete", ["apikey", "upload_id", "parts", "upload_tags"], b""),
    ("POST", "/process", ["key", "policy", "signature"], b"{}"),
    ("GET", "/metrics", ["name"], b""),
    ("GET", "/api/openapi.json", ["x"], b""),
]


@BOUNDED
@given(
    endpoint=st.sampled_from(ENDPOINTS),
    which=st.integers(min_value=0, max_value=9),
    value=HOSTILE_VALUE,
)
def test_any_query_parameter_of_any_endpoint(
    live: Live, endpoint: tuple[str, str, list[str], bytes], which: int, value: str | bytes
) -> None:
    method, template, names, body = endpoint
    scratch = live.store(b"scratch")["handle"]
    path = template.format(scratch=scratch, upload_id="u" * 32)
    name = names[which % len(names)]
    headers: list[tuple[bytes | str, bytes | str]] = [live.auth()]
    if template == "/process":
        headers.append(("Content-Type", "application/json"))
    answer = rawhttp.request(live.port, method, f"{path}?{name}={q(_raw(value))}", headers, body)
    answered(answer)
    still_readable(live, live.sentinel, b"the sentinel stays readable")
