"""End-to-end: the real ``stowage serve`` process on loopback ports
(tests/servers/stowage_serve.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.servers.stowage_serve import Running, running


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Running]:
    yield from running(tmp_path / "data")


@pytest.fixture
def json_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Running]:
    """The server with ``log_format=json``."""
    monkeypatch.setenv("STOWAGE_LOG_FORMAT", "json")
    yield from running(tmp_path / "data")
