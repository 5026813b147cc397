"""Dropbox: the HTTPS fake of ``tests/servers/dropbox_fake.py``, run as its own process.

The ``dropbox`` SDK reads ``DROPBOX_API_HOST``/``DROPBOX_API_CONTENT_HOST`` once,
when it is imported, and binds the API host into a default argument of its
token-refresh method. So this module, loaded by ``tests/conftest.py`` as a plugin
before any test module is imported, reserves the fake's port at import (a bound
socket, later handed to the fake process, so no other process can take the port
in between) and points the SDK at it: through the environment variables if the
SDK is not imported yet, else by also setting the SDK's module-level host names
(read when a client is built) and that default argument. ``dropbox_fake`` checks
that the SDK really points at the fake before any test runs.
"""

from __future__ import annotations

import json
import os
import secrets
import select
import socket
import ssl
import subprocess
import sys
import urllib.request
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

PROVIDER_FIXTURES = ["dropbox"]
REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT = 20.0


def _reserve_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


def _point_sdk_at(host: str) -> None:
    os.environ["DROPBOX_API_HOST"] = host
    os.environ["DROPBOX_API_CONTENT_HOST"] = host
    client = sys.modules.get("dropbox.dropbox_client")
    if client is not None:  # imported before this plugin: its host names are already read
        vars(client).update(API_HOST=host, API_CONTENT_HOST=host)
        refresh = client._DropboxTransport.refresh_access_token
        refresh.__defaults__ = (host, None)


_SOCKET = _reserve_socket()
HOST = f"127.0.0.1:{_SOCKET.getsockname()[1]}"
_point_sdk_at(HOST)


@dataclass
class DropboxFake:
    host: str
    cert: Path
    token: str
    app_key: str
    app_secret: str
    refresh_token: str
    process: subprocess.Popen[bytes]

    def hook(self, name: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"https://{self.host}/__fake__/{name}", data=data, method="POST" if data else "GET"
        )
        request.add_header("Content-Type", "application/json")
        context = ssl.create_default_context(cafile=str(self.cert))
        with urllib.request.urlopen(request, context=context, timeout=10) as response:
            return json.loads(response.read())

    def log(self) -> list[dict[str, Any]]:
        entries: list[dict[str, Any]] = self.hook("log")
        return entries

    def config(self, **overrides: Any) -> dict[str, Any]:
        config: dict[str, Any] = {
            "type": "dropbox",
            "access_token": self.token,
            "ca_certs": str(self.cert),
            "root": f"/stowage-test-{secrets.token_hex(4)}",
        }
        config.update(overrides)
        return config


def _wait_ready(process: subprocess.Popen[bytes], log: Path) -> None:
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], START_TIMEOUT)
    line = process.stdout.readline() if ready else b""
    if line.strip() != b"READY":
        process.kill()
        process.wait()
        tail = log.read_text(errors="replace")[-2000:]
        raise RuntimeError(f"the Dropbox fake did not start: {line!r}\n{tail}")


@pytest.fixture(scope="session")
def dropbox_fake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DropboxFake]:
    import dropbox.dropbox_client as sdk

    if (sdk.API_HOST, sdk.API_CONTENT_HOST) != (HOST, HOST):
        raise RuntimeError(f"the dropbox SDK does not point at the fake: {sdk.API_HOST}")
    directory = tmp_path_factory.mktemp("dropbox-fake")
    secrets_ = {name: secrets.token_urlsafe(16) for name in ("token", "key", "secret", "refresh")}
    command = [
        sys.executable,
        "-m",
        "tests.servers.dropbox_fake",
        *("--fd", str(_SOCKET.fileno()), "--dir", str(directory)),
        # --name=value: a random value may start with "-", which argparse would take for a flag
        f"--token={secrets_['token']}",
        f"--app-key={secrets_['key']}",
        f"--app-secret={secrets_['secret']}",
        f"--refresh-token={secrets_['refresh']}",
    ]
    log = directory / "fake.log"
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            command, cwd=REPO, pass_fds=(_SOCKET.fileno(),), stdout=subprocess.PIPE, stderr=stderr
        )
    try:
        _wait_ready(process, log)
        _SOCKET.close()  # the fake holds its own copy
        yield DropboxFake(
            HOST,
            directory / "cert.pem",
            secrets_["token"],
            secrets_["key"],
            secrets_["secret"],
            secrets_["refresh"],
            process,
        )
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


@pytest.fixture
def dropbox_config(dropbox_fake: DropboxFake) -> dict[str, Any]:
    """One config (one random root) per test, shared by the provider and the app."""
    return dropbox_fake.config()


@pytest.fixture
async def provider_dropbox(dropbox_config: dict[str, Any]) -> AsyncIterator[Any]:
    from stowage.storage.dropbox import from_config

    provider = from_config(dropbox_config, Path("."))
    yield provider
    await provider.close()


@pytest.fixture
def storage_config_dropbox(dropbox_config: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "dropbox", dropbox_config
