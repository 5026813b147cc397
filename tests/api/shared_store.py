"""Fixtures for tests whose nodes keep their default store in a provider's server (S3,
GCS, Azure, Swift, ...): the store the tests inspect and the settings that point at it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stowage.config import Settings
from stowage.storage.base import Provider


@pytest.fixture
def shared(request: pytest.FixtureRequest, provider_name: str) -> tuple[dict[str, Any], Provider]:
    # Sync on purpose: the server fixtures behind these may run their own event loop.
    provider: Provider = request.getfixturevalue(f"provider_{provider_name}")
    _api_name, config = request.getfixturevalue(f"storage_config_{provider_name}")
    return config, provider


@pytest.fixture
def settings(tmp_path: Path, shared: tuple[dict[str, Any], Provider]) -> Settings:
    config, _ = shared
    return Settings(
        data_dir=tmp_path / "data",
        default_storage=config,
        fetch_allow_private=True,
        access_log=False,
    )
