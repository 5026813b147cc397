from __future__ import annotations

import pytest

from stowage.storage.base import Provider


@pytest.fixture
def provider(request: pytest.FixtureRequest, provider_name: str) -> Provider:
    p: Provider = request.getfixturevalue(f"provider_{provider_name}")
    return p
