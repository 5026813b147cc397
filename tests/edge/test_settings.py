"""The edge settings: a list of cache URLs from the environment or TOML, checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from stowage.config import load_settings
from stowage.edge import NullPurger, build_purger
from stowage.edge.purger import EdgePurger
from stowage.registry.sqlite import SQLiteRegistry


def test_cache_urls_from_the_environment_and_toml(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("STOWAGE_EDGE_CACHE_URLS", " http://10.0.0.5:80, http://10.0.0.6:80 ,")
    assert load_settings().edge_cache_urls == ["http://10.0.0.5:80", "http://10.0.0.6:80"]
    monkeypatch.delenv("STOWAGE_EDGE_CACHE_URLS")
    toml = tmp_path / "stowage.toml"
    toml.write_text('edge_cache_urls = ["http://c1:6081"]\nedge_ttl = 600\n')
    settings = load_settings(toml)
    assert settings.edge_cache_urls == ["http://c1:6081"] and settings.edge_ttl == 600
    assert load_settings().edge_cache_urls == []  # the default: no edge cache


def test_purger_only_with_caches_and_valid_urls(tmp_path: Path) -> None:
    registry = SQLiteRegistry(tmp_path / "r.db")
    assert isinstance(build_purger(load_settings(), registry), NullPurger)
    with_caches = load_settings(edge_cache_urls=["http://127.0.0.1:9"])
    assert isinstance(build_purger(with_caches, registry), EdgePurger)
    # Checked when the settings load (tests/test_settings_checked.py), before any purger.
    with pytest.raises(ValueError, match="setting edge_cache_urls: expected a list of URLs"):
        load_settings(edge_cache_urls=["10.0.0.5:80"])
    with pytest.raises(ValueError, match="setting edge_bypass_url: expected a URL"):
        load_settings(edge_bypass_url="origin.example.com")
