"""Issue 13: hostile input against a real ``stowage serve``, byte for byte (rawhttp).

Each test names the defect class it covers; each failed before the fix. Every refused
input must be a JSON 4xx in the one error shape, store nothing, and leave the file stored
before it downloadable, whole, on both origins.
"""

from __future__ import annotations

import base64
import gzip
import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stowage.core.security import encode_policy, sign
from tests.reliability import rawhttp
from tests.reliability.conftest import TOTALS
from tests.reliability.rawhttp import Answer, query
from tests.reliability.serve import Serve

MiB = 1024 * 1024


class Live:
    def __init__(self, server: Serve, key: str, secret: str) -> None:
        self.server, self.key, self.secret = server, key, secret
        self.sentinel = self.store(b"the sentinel stays readable")["handle"]

    @property
    def port(self) -> int:
        return self.server.port

    def store(self, data: bytes, **params: str) -> dict[str, Any]:
        answer = rawhttp.request(
            self.port, "POST", f"/api/store/S3?{query(key=self.key, **params)}", body=data
        )
        assert answer.status == 200, (answer.status, answer.body)
        result: dict[str, Any] = answer.json()
        return result

    def policy(self, **fields: Any) -> dict[str, str]:
        fields.setdefault("expiry", int(time.time()) + 600)
        encoded = encode_policy(fields)
        return {"policy": encoded, "signature": sign(self.secret, encoded)}

    def auth(self) -> tuple[bytes, bytes]:
        token = base64.b64encode(f"app:{self.secret}".encode())
        return b"Authorization", b"Basic " + token

    def rows(self) -> int:
        return len(self.server.rows())

    def download(self, handle: str, cdn: bool = False) -> Answer:
        port = self.server.cdn_port if cdn else self.port
        path = f"/{handle}" if cdn else f"/api/file/{handle}"
        return rawhttp.request(port, "GET", path)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    server = Serve(Path(tmp_path_factory.mktemp("hostile")) / "data")
    server.env["STOWAGE_MAX_UPLOAD_BYTES"] = str(MiB)
    key, secret = server.create_app()
    server.start()
    try:
        yield Live(server, key, secret)
    finally:
        server.stop_quietly()


def refused(answer: Answer, *statuses: int) -> dict[str, Any]:
    """A JSON 4xx in the error shape (never a 5xx for a client's bytes)."""
    TOTALS.inputs_tried += 1
    if answer.status >= 500:
        TOTALS.client_errors_answered_5xx += 1
    assert answer.status in (statuses or range(400, 500)), (answer.status, answer.body)
    assert answer.is_error_shape, (answer.headers, answer.body)
    body: dict[str, Any] = answer.json()
    return body


def still_readable(live: Live, handle: str, expected: bytes) -> None:
    for cdn in (False, True):
        answer = live.download(handle, cdn=cdn)
        if answer.body != expected:
            TOTALS.files_lost += 1
        assert answer.status == 200 and answer.body == expected, (answer.status, answer.body)


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
            f"/api/store/S3?{query(key=live.key, mimetype=mimetype, url='http://127.0.0.1:1/x')}",
            [],
            b"",
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
        b"--B\r\nContent-Disposition: form-data; name=\"fileUpload\"; filename=\"a.txt\"\r\n"
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
