"""Fixtures of tests/sdk; the helpers they use are in stack.py."""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from tests.sdk.stack import (
    MiB,
    QuietHandler,
    Sample,
    Stack,
    make_file,
)
from tests.servers.stowage_serve import StowageServe


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    server = StowageServe(tmp_path_factory.mktemp("sdk") / "data")
    opened = json.loads(server.cli("apps", "create", "--json"))
    secure = json.loads(server.cli("apps", "create", "--security", "--json"))
    server.start()
    try:
        yield Stack(
            server, opened["api_key"], opened["secret"], secure["api_key"], secure["secret"]
        )
    finally:
        server.stop()


@pytest.fixture(scope="session")
def big_file(tmp_path_factory: pytest.TempPathFactory) -> Sample:
    """100 MiB and a bit: several parts in either SDK (5 MiB python, 6 MiB js)."""
    return make_file(tmp_path_factory.mktemp("big") / "big.bin", 100 * MiB + 12345)


@pytest.fixture
def small_file(tmp_path: Path) -> Sample:
    path = tmp_path / "hello.txt"
    path.write_bytes(b"hello from the official SDK\n")
    return Sample(path, hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_size)


SITE = "sdk-site"  # browser tests make "site*" folders too


def site_folder(tmp_path_factory: pytest.TempPathFactory, body: bytes) -> Path:
    """The folder a ``source_site`` serves: the one whose remote.bin is its random body
    (the fixture may be made more than once in a run, each in a folder of its own)."""
    return next(
        folder
        for folder in Path(tmp_path_factory.getbasetemp()).glob(SITE + "*")
        if (folder / "remote.bin").is_file() and (folder / "remote.bin").read_bytes() == body
    )


@pytest.fixture(scope="module")
def source_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, bytes]]:
    """A plain web server on loopback with one file, for store-from-URL."""
    root = tmp_path_factory.mktemp(SITE)
    body = os.urandom(300_000)
    (root / "remote.bin").write_bytes(body)
    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), partial(QuietHandler, directory=str(root))
    )
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/remote.bin", body
    finally:
        httpd.shutdown()
        httpd.server_close()
