"""Each provider's typed settings. They live in ``values/storage.py``, below ``config``, so
that the service's ``default_storage`` is parsed into them when its settings load; the
provider modules import them from here."""

from __future__ import annotations

from stowage.values.storage import (
    KINDS,
    MIB,
    AzureSettings,
    DropboxSettings,
    GcsSettings,
    LocalSettings,
    ProviderSettings,
    RackspaceSettings,
    S3Settings,
    check,
    parse,
)

__all__ = [
    "KINDS",
    "MIB",
    "AzureSettings",
    "DropboxSettings",
    "GcsSettings",
    "LocalSettings",
    "ProviderSettings",
    "RackspaceSettings",
    "S3Settings",
    "check",
    "parse",
]
