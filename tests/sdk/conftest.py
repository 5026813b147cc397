"""The official Filestack SDKs against a real ``stowage serve`` on loopback.

Both SDKs are installed by scripts/setup.d/60-filestack-sdks.sh; a missing one fails
these tests (importing filestack fails collection; ``run_js`` raises).
"""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Server

ROOT = Path(__file__).resolve().parents[2]
NODE_MODULES = ROOT / ".test-servers" / "filestack-js" / "node_modules"
FLOWS = Path(__file__).parent / "js" / "flows.js"
MiB = 1024 * 1024


@dataclass
class Stack:
    server: Server
    open_key: str
    open_secret: str
    secure_key: str
    secure_secret: str

    @property
    def api(self) -> str:
        return self.server.api

    @property
    def cdn(self) -> str:
        return self.server.cdn


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    server = Server(tmp_path_factory.mktemp("sdk") / "data")
    opened = json.loads(server.cli("apps", "create", "--json"))
    secure = json.loads(server.cli("apps", "create", "--security", "--json"))
    server.start()
    try:
        yield Stack(
            server, opened["api_key"], opened["secret"], secure["api_key"], secure["secret"]
        )
    finally:
        server.stop()


@dataclass
class Sample:
    path: Path
    sha256: str
    size: int


def make_file(path: Path, size: int) -> Sample:
    digest = hashlib.sha256()
    with path.open("wb") as f:
        left = size
        while left:
            block = os.urandom(min(left, 4 * MiB))
            digest.update(block)
            f.write(block)
            left -= len(block)
    return Sample(path, digest.hexdigest(), size)


@pytest.fixture(scope="session")
def big_file(tmp_path_factory: pytest.TempPathFactory) -> Sample:
    """100 MiB and a bit: several parts in either SDK (5 MiB python, 6 MiB js)."""
    return make_file(tmp_path_factory.mktemp("big") / "big.bin", 100 * MiB + 12345)


@pytest.fixture
def small_file(tmp_path: Path) -> Sample:
    path = tmp_path / "hello.txt"
    path.write_bytes(b"hello from the official SDK\n")
    return Sample(path, hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_size)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return None


@pytest.fixture(scope="module")
def source_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, bytes]]:
    """A plain web server on loopback with one file, for store-from-URL."""
    root = tmp_path_factory.mktemp("site")
    body = os.urandom(300_000)
    (root / "remote.bin").write_bytes(body)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/remote.bin", body
    finally:
        httpd.shutdown()
        httpd.server_close()


def run_js(stack: Stack, flow: str, *, secure: bool = False, **args: Any) -> Any:
    """Run one flow of js/flows.js with filestack-js; its result, or raise with its error."""
    if not (NODE_MODULES / "filestack-js" / "package.json").is_file():
        raise RuntimeError(
            "filestack-js is not installed: run scripts/setup.d/60-filestack-sdks.sh"
        )
    payload = {
        "api": stack.api,
        "cdn": stack.cdn,
        "apikey": stack.secure_key if secure else stack.open_key,
        "secret": stack.secure_secret if secure else stack.open_secret,
        "flow": flow,
        **args,
    }
    env = {**os.environ, "NODE_PATH": str(NODE_MODULES)}
    proc = subprocess.run(
        ["node", str(FLOWS), json.dumps(payload)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=FLOWS.parent,
    )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"node failed ({proc.returncode}): {proc.stderr[-2000:]}")
    answer = json.loads(lines[-1])
    if not answer["ok"]:
        raise JsError(answer["error"], answer.get("details"))
    return answer["result"]


class JsError(Exception):
    def __init__(self, message: str, details: Any) -> None:
        super().__init__(f"{message}: {details}")
        self.details = details
