"""A real ``stowage serve`` for hostile-input tests, and the checks every refused input
must pass: a JSON 4xx in the error shape, nothing stored, older files still whole."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stowage.core.security import encode_policy, sign
from tests.reliability import rawhttp
from tests.reliability.checks import TOTALS
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
