"""The GCS provider's server: gcp-storage-emulator, in memory, one per session.

Installed into the project venv by ``scripts/setup.d/30-gcs.sh``. The emulator
ignores authentication, so the provider runs with ``anonymous: true``.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from stowage.storage.gcs import GcsProvider, from_config
from tests.servers.emulators import start, stop
from tests.servers.ports import free_port

PROVIDER_FIXTURES = ["gcs"]

BUCKET = "stowage-test"


@pytest.fixture(scope="session")
def gcs_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    argv = [
        sys.executable,
        "-m",
        "gcp_storage_emulator",
        "start",
        "--host=127.0.0.1",
        f"--port={port}",
        "--in-memory",
        f"--default-bucket={BUCKET}",
    ]
    proc = start("gcp-storage-emulator", argv, port, tmp_path_factory.mktemp("gcs") / "gcs.log")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(proc)


def gcs_config(endpoint: str, **overrides: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "type": "gcs",
        "bucket": BUCKET,
        "project": "stowage-test",
        "anonymous": True,
        "endpoint_url": endpoint,
    }
    config.update(overrides)
    return config


@pytest.fixture
async def provider_gcs(gcs_endpoint: str, tmp_path: Path) -> AsyncIterator[GcsProvider]:
    provider = from_config(gcs_config(gcs_endpoint), tmp_path)
    yield provider
    await provider.close()


@pytest.fixture
def storage_config_gcs(gcs_endpoint: str) -> tuple[str, dict[str, Any]]:
    return "gcs", gcs_config(gcs_endpoint)
