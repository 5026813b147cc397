"""Swift all-in-one (also serving S3 via s3api) and the Rackspace provider on top of it.

``swift_server`` is session-scoped and shared: the S3 fixtures use its
``s3_endpoint`` / ``s3_access_key`` / ``s3_secret_key``. The Rackspace provider
logs in at a local identity endpoint (``rackspace_identity``) that hands out
tempauth tokens with a Rackspace-shaped service catalogue.
"""

from __future__ import annotations

import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from stowage.storage.rackspace import RackspaceProvider, from_config
from tests.servers.rackspace_identity import RackspaceIdentity
from tests.servers.swift_aio import SwiftAIO

PROVIDER_FIXTURES = ["rackspace"]

RACKSPACE_CONTAINER = "stowage-test"
# Small sizes so the contract suite's 12 MiB object goes through the SLO path.
RACKSPACE_SEGMENT_SIZE = 4 * 1024 * 1024
RACKSPACE_INLINE_LIMIT = 1024 * 1024


@pytest.fixture(scope="session")
def swift_server() -> Iterator[SwiftAIO]:
    server = SwiftAIO.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def rackspace_identity(swift_server: SwiftAIO) -> Iterator[RackspaceIdentity]:
    identity = RackspaceIdentity(swift_server).start()
    create_container(swift_server, RACKSPACE_CONTAINER)
    try:
        yield identity
    finally:
        identity.stop()


def create_container(server: SwiftAIO, name: str) -> None:
    request = urllib.request.Request(
        f"{server.storage_url}/{name}", method="PUT", headers={"X-Auth-Token": server.get_token()}
    )
    with urllib.request.urlopen(request, timeout=10):
        pass


def rackspace_config(identity: RackspaceIdentity, **overrides: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "type": "rackspace",
        "identity_url": identity.url,
        "username": identity.username,
        "api_key": identity.api_key,
        "region": "DFW",
        "container": RACKSPACE_CONTAINER,
        "segment_size": RACKSPACE_SEGMENT_SIZE,
        "inline_limit": RACKSPACE_INLINE_LIMIT,
    }
    config.update(overrides)
    return config


@pytest.fixture
async def provider_rackspace(
    rackspace_identity: RackspaceIdentity, tmp_path: Path
) -> AsyncIterator[RackspaceProvider]:
    provider = from_config(rackspace_config(rackspace_identity), tmp_path)
    yield provider
    await provider.close()


@pytest.fixture
def storage_config_rackspace(rackspace_identity: RackspaceIdentity) -> tuple[str, dict[str, Any]]:
    return "rackspace", rackspace_config(rackspace_identity)
