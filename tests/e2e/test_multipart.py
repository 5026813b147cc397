"""Multipart uploads on the real server: resumed after a crash, and abandoned ones swept."""

from __future__ import annotations

import base64
import hashlib
import os
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.servers.stowage_serve import Running, StowageServe

MiB = 1024 * 1024


def _post(srv: StowageServe, path: str, **body: Any) -> requests.Response:
    return requests.post(f"{srv.api}{path}", json=body, timeout=30)


def _send_part(srv: StowageServe, key: str, upload_id: str, n: int, chunk: bytes) -> str:
    md5 = base64.b64encode(hashlib.md5(chunk).digest()).decode()
    body = {"apikey": key, "upload_id": upload_id, "part": n, "size": len(chunk), "md5": md5}
    target = _post(srv, "/multipart/upload", **body).json()
    resp = requests.put(target["url"], data=chunk, headers=target["headers"], timeout=30)
    assert resp.status_code == 200, resp.text
    return resp.headers["ETag"]


def test_interrupted_upload_resumes_with_only_the_missing_parts(server: Running) -> None:
    srv, key = server.server, server.key
    data = os.urandom(10 * MiB + 3)
    chunks = [data[i : i + 2 * MiB] for i in range(0, len(data), 2 * MiB)]
    start = {"apikey": key, "filename": "resume.bin", "size": len(data), "store": {}}
    started = _post(srv, "/multipart/start", **start).json()
    etags = {n: _send_part(srv, key, started["upload_id"], n, chunks[n - 1]) for n in (1, 2, 4)}
    srv.kill()  # the client and the server both die mid-upload
    srv.start()
    etags.update(
        {n: _send_part(srv, key, started["upload_id"], n, chunks[n - 1]) for n in (3, 5, 6)}
    )
    parts = [{"part_number": n, "etag": etags[n]} for n in sorted(etags)]
    body = {"apikey": key, "upload_id": started["upload_id"], "parts": parts}
    done = _post(srv, "/multipart/complete", **body)
    assert done.status_code == 200, done.text
    handle = done.json()["handle"]
    meta = requests.get(f"{srv.api}/api/file/{handle}/metadata?sha256=true&size=true", timeout=10)
    assert meta.json() == {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    assert not (srv.data_dir / "uploads" / started["upload_id"]).exists()


@pytest.fixture
def short_expiry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Running:
    monkeypatch.setenv("STOWAGE_UPLOAD_EXPIRY_SECONDS", "2")
    srv = StowageServe(tmp_path / "data")
    key, secret = srv.create_app()
    srv.start()
    return Running(srv, key, secret)


def test_abandoned_upload_is_removed_after_expiry(short_expiry: Running) -> None:
    srv, key = short_expiry.server, short_expiry.key
    try:
        start = {"apikey": key, "filename": "gone.bin", "size": 2 * MiB, "store": {}}
        upload_id = _post(srv, "/multipart/start", **start).json()["upload_id"]
        _send_part(srv, key, upload_id, 1, os.urandom(MiB))
        folder = srv.data_dir / "uploads" / upload_id
        assert folder.is_dir()
        deadline = time.monotonic() + 15
        while folder.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not folder.exists(), "the abandoned upload's parts are still there"
        body = {"apikey": key, "upload_id": upload_id, "parts": []}
        resp = _post(srv, "/multipart/complete", **body)
        assert resp.status_code == 404 and resp.json()["error"]["code"] == "UPLOAD_NOT_FOUND"
    finally:
        srv.stop()
