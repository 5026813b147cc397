"""filestack-python 4.0.0 (PyPI), unchanged, against a real stowage serve (shim:
filestack_shim.py)."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import filestack
import pytest
import requests
from filestack import Client, Security
from filestack.exceptions import FilestackHTTPError

from tests.sdk.filestack_shim import point_filestack_at
from tests.sdk.stack import Sample, Stack

ALL_CALLS = ["read", "stat", "store", "write", "writeUrl", "remove"]


@pytest.fixture(autouse=True)
def pointed(stack: Stack) -> Iterator[None]:
    saved = {k: filestack.CFG.__dict__[k] for k in ("API_URL", "CDN_URL", "MULTIPART_START_URL")}
    original = filestack.utils.original_requests
    point_filestack_at(stack.api, stack.cdn)
    yield
    for name, value in saved.items():
        setattr(filestack.CFG, name, value)
    filestack.utils.original_requests = original


def security(stack: Stack, **extra: Any) -> Security:
    return Security({"expiry": int(time.time()) + 3600, "call": ALL_CALLS, **extra},
                    stack.secure_secret)  # fmt: skip


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_upload_small_then_read_it(stack: Stack, small_file: Sample) -> None:
    link = Client(stack.open_key).upload(filepath=str(small_file.path))
    assert len(link.handle) == 20
    assert link.upload_response["status"] == "Stored"
    assert link.url == f"{stack.cdn}/{link.handle}"
    assert sha(link.get_content()) == small_file.sha256
    meta = link.metadata(["size", "filename", "sha256"])
    assert meta == {"size": small_file.size, "filename": "hello.txt", "sha256": small_file.sha256}
    assert link.metadata()["mimetype"] == "text/plain"


def test_upload_large_in_parts(stack: Stack, big_file: Sample, tmp_path: Path) -> None:
    before = stack.server.peak_rss_kib()
    link = Client(stack.open_key).upload(filepath=str(big_file.path))
    assert link.download(str(tmp_path / "back.bin")) == big_file.size
    assert sha((tmp_path / "back.bin").read_bytes()) == big_file.sha256
    assert link.metadata(["sha256"])["sha256"] == big_file.sha256
    grown_mib = (stack.server.peak_rss_kib() - before) / 1024
    print(f"filestack-python 100 MiB upload: server peak RSS grew {grown_mib:.1f} MiB")
    assert grown_mib < 64, f"server peak memory grew {grown_mib:.1f} MiB for a 100 MiB upload"


def test_upload_intelligent_mode(stack: Stack, tmp_path: Path) -> None:
    data = hashlib.sha256(b"fii").digest() * (700 * 1024)  # 21.9 MiB: 3 parts of 8 MiB
    path = tmp_path / "fii.bin"
    path.write_bytes(data)
    log = stack.server.log
    assert log is not None
    commits = log.read_text().count("POST /multipart/commit")
    link = Client(stack.open_key).upload(filepath=str(path), intelligent=True)
    assert link.metadata(["sha256", "size"]) == {"sha256": sha(data), "size": len(data)}
    assert log.read_text().count("POST /multipart/commit") == commits + 3  # one per part


def test_upload_with_store_params(stack: Stack, small_file: Sample) -> None:
    params = {"filename": "named.txt", "path": "docs/", "mimetype": "text/markdown"}
    link = Client(stack.open_key).upload(filepath=str(small_file.path), store_params=params)
    meta = link.metadata(["filename", "path", "mimetype"])
    assert meta["filename"] == "named.txt" and meta["mimetype"] == "text/markdown"
    assert meta["path"].startswith("docs/") and meta["path"].endswith("_named.txt")


def test_upload_url(stack: Stack, source_site: tuple[str, bytes]) -> None:
    url, body = source_site
    link = Client(stack.open_key).upload_url(url, store_params={"filename": "r.bin"})
    assert link.upload_response["filename"] == "r.bin"
    assert sha(link.get_content()) == sha(body)


def test_secure_app_every_call_signed(
    stack: Stack, small_file: Sample, source_site: tuple[str, bytes], tmp_path: Path
) -> None:
    client = Client(stack.secure_key)
    with pytest.raises(FilestackHTTPError):
        client.upload(filepath=str(small_file.path))
    sec = security(stack)
    link = client.upload(filepath=str(small_file.path), security=sec)
    with pytest.raises(FilestackHTTPError):
        link.get_content()
    signed = link.signed_url(sec)  # <cdn>/security=p:<policy>,s:<signature>/<handle>
    assert "/security=p:" in signed
    assert sha(requests.get(signed, timeout=10).content) == small_file.sha256
    assert sha(link.get_content(security=sec)) == small_file.sha256
    assert link.metadata(["size"], security=sec) == {"size": small_file.size}
    # the same policy in the query string, as the ruby/java/php SDKs send it, with dl=true
    query = {"policy": sec.policy_b64, "signature": sec.signature, "dl": "true"}
    resp = requests.get(f"{stack.cdn}/{link.handle}", params=query, timeout=10)
    assert resp.status_code == 200 and resp.headers["Content-Disposition"].startswith("attach")

    new = tmp_path / "new.bin"
    new.write_bytes(b"overwritten by filestack-python")
    link.overwrite(filepath=str(new), security=sec)
    assert link.get_content(security=sec) == new.read_bytes()
    url, body = source_site
    link.overwrite(url=url, security=sec)
    assert sha(link.get_content(security=sec)) == sha(body)

    url_store = Client(stack.secure_key, security=sec).upload_url(url)
    assert sha(url_store.get_content(security=sec)) == sha(body)

    link.delete(apikey=stack.secure_key, security=security(stack, call=["remove"]))
    with pytest.raises(FilestackHTTPError):
        link.get_content(security=sec)


def test_policy_restrictions_hold_for_uploads(stack: Stack, small_file: Sample) -> None:
    client = Client(stack.secure_key)
    for restriction in ({"maxSize": 5}, {"minSize": 10_000}, {"path": "only/.*"}):
        with pytest.raises(FilestackHTTPError):
            client.upload(filepath=str(small_file.path), security=security(stack, **restriction))
    allowed = security(stack, path="only/.*", maxSize=1000)
    link = client.upload(
        filepath=str(small_file.path), store_params={"path": "only/"}, security=allowed
    )
    assert link.metadata(["path"], security=security(stack))["path"].startswith("only/")
