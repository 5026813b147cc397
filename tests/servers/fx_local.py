"""The local disk provider needs no server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from stowage.storage.local import LocalProvider

PROVIDER_FIXTURES = ["local"]


@pytest.fixture
async def provider_local(tmp_path: Path) -> AsyncIterator[LocalProvider]:
    provider = LocalProvider(tmp_path / "store")
    yield provider
    await provider.close()


@pytest.fixture
def storage_config_local(provider_local: LocalProvider) -> tuple[str, dict[str, Any]]:
    return "S3", {"type": "local", "root": str(provider_local.root)}
