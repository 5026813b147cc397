"""Settings: defaults, config file, environment and options, later ones winning."""

from __future__ import annotations

from pathlib import Path

import pytest

from stowage.config import load_settings
from stowage.storage.settings import LocalSettings


def test_sources_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "stowage.toml"
    config.write_text('port = 9000\ncdn_port = 9001\nstore_link = "api"\nmax_upload_bytes = 5\n')
    monkeypatch.setenv("STOWAGE_CDN_PORT", "9100")
    monkeypatch.setenv("STOWAGE_FETCH_ALLOW_PRIVATE", "true")
    monkeypatch.setenv("STOWAGE_DEFAULT_STORAGE", '{"type": "local", "root": "/srv/x"}')
    settings = load_settings(config, port=None, host="0.0.0.0")
    assert settings.port == 9000  # file
    assert settings.cdn_port == 9100  # environment beats file
    assert settings.host == "0.0.0.0"  # option
    assert settings.store_link == "api" and settings.max_upload_bytes == 5
    assert settings.fetch_allow_private is True
    assert settings.default_storage == LocalSettings(root="/srv/x")
    assert settings.api_url() == "http://0.0.0.0:9000/api"


def test_defaults_are_safe() -> None:
    settings = load_settings()
    assert settings.host == "127.0.0.1"
    assert settings.fetch_allow_private is False
    assert settings.inline_active_types is False


def test_unknown_setting_is_an_error(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text("prot = 1\n")
    with pytest.raises(ValueError, match="prot"):
        load_settings(config)


def test_public_urls_for_reverse_proxies() -> None:
    settings = load_settings(
        api_public_url="https://files.example.com/api/", cdn_public_url="https://cdn.example.com"
    )
    assert settings.api_url() == "https://files.example.com/api"
    assert settings.cdn_url() == "https://cdn.example.com"
