"""The Azure provider's server: Azurite (Microsoft's emulator), one per session.

Installed by ``scripts/setup.d/40-azurite.sh`` into ``.test-servers/azurite``
from the pinned ``tests/servers/azurite/package*.json``. Azurite needs
``--skipApiVersionCheck`` (the current SDK asks for a newer API version than
it knows) and ``--loose``; it runs with ``--disableTelemetry`` and serves the
well-known ``devstoreaccount1``.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from azure.core.exceptions import ResourceExistsError
from azure.storage.blob import BlobServiceClient

from stowage.storage.azure import AzureProvider, from_config
from tests.servers.emulators import REPO, start, stop
from tests.servers.ports import free_port

PROVIDER_FIXTURES = ["azure"]

CONTAINER = "stowage-test"
ACCOUNT = "devstoreaccount1"
# Azurite's documented development key, public by design.
ACCOUNT_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
AZURITE_MAIN = REPO / ".test-servers/azurite/node_modules/azurite/dist/src/blob/main.js"


def azure_config(endpoint: str, **overrides: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "type": "azure",
        "account_name": ACCOUNT,
        "account_key": ACCOUNT_KEY,
        "container": CONTAINER,
        "endpoint_url": endpoint,
    }
    config.update(overrides)
    return config


def _make_container(endpoint: str) -> None:
    # The sync client: this session fixture may be first requested from inside a running loop.
    credential = {"account_name": ACCOUNT, "account_key": ACCOUNT_KEY}
    with (
        BlobServiceClient(endpoint, credential=credential) as service,
        contextlib.suppress(ResourceExistsError),
    ):
        service.create_container(CONTAINER)


@pytest.fixture(scope="session")
def azure_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    node = shutil.which("node")
    if node is None or not AZURITE_MAIN.is_file():
        raise RuntimeError("Azurite is not installed: run scripts/setup.d/40-azurite.sh")
    work = tmp_path_factory.mktemp("azurite")
    port = free_port()
    argv = [
        node,
        str(AZURITE_MAIN),
        "--blobHost",
        "127.0.0.1",
        "--blobPort",
        str(port),
        "--location",
        str(work / "data"),
        "--skipApiVersionCheck",
        "--loose",
        # Telemetry would try to reach the vendor's collector (unreachable here) and
        # holds shutdown for about 10 s.
        "--disableTelemetry",
    ]
    proc = start("azurite", argv, port, work / "azurite.log")
    try:
        endpoint = f"http://127.0.0.1:{port}/{ACCOUNT}"
        _make_container(endpoint)
        yield endpoint
    finally:
        stop(proc)


@pytest.fixture
async def provider_azure(azure_endpoint: str, tmp_path: Path) -> AsyncIterator[AzureProvider]:
    provider = from_config(azure_config(azure_endpoint), tmp_path)
    yield provider
    await provider.close()


@pytest.fixture
def storage_config_azure(azure_endpoint: str) -> tuple[str, dict[str, Any]]:
    return "azure", azure_config(azure_endpoint)
