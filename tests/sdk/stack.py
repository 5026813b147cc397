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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.servers.stowage_serve import StowageServe

ROOT = Path(__file__).resolve().parents[2]


NODE_MODULES = ROOT / ".test-servers" / "filestack-js" / "node_modules"


FLOWS = Path(__file__).parent / "js" / "flows.js"


MiB = 1024 * 1024


@dataclass
class Stack:
    server: StowageServe
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


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return None


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
