"""Storage providers and the one place that builds them from configuration.

Each provider is one module exposing ``build(settings, data_dir)`` (its typed settings,
``storage/settings.py``) and ``from_config(config, data_dir)``; its SDK
is imported only there and installed as an extra (``pip install stowage[s3]``).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from stowage import errors
from stowage.storage import settings
from stowage.storage.base import Provider
from stowage.storage.settings import ProviderSettings

#: Provider type name -> module implementing it.
MODULES: dict[str, str] = {
    "local": "stowage.storage.local",
    "s3": "stowage.storage.s3",
    "gcs": "stowage.storage.gcs",
    "azure": "stowage.storage.azure",
    "rackspace": "stowage.storage.rackspace",
    "dropbox": "stowage.storage.dropbox",
}

#: The provider names of the File API (``/store/<PROVIDER>``) -> the default type for each.
API_PROVIDERS: dict[str, str] = {
    "S3": "s3",
    "gcs": "gcs",
    "azure": "azure",
    "rackspace": "rackspace",
    "dropbox": "dropbox",
}


def check_app_storage(storage: Mapping[str, Any]) -> None:
    """An app's storage table, as ``apps create/update --storage`` gives it: each entry
    names a File API provider and holds a configuration its type accepts."""
    for api_name, config in storage.items():
        if api_name not in API_PROVIDERS:
            raise errors.StorageMisconfigured(
                f"unknown provider {api_name!r}; one of {', '.join(API_PROVIDERS)}",
                field=api_name,
            )
        if not isinstance(config, Mapping):
            raise errors.StorageMisconfigured(f"{api_name}: must be a table", field=api_name)
        settings.check(config)


def build_provider(config: ProviderSettings | Mapping[str, Any], data_dir: Path) -> Provider:
    """The provider of typed settings (parsed once, when the settings or the app's row were
    read), or of a configuration table, parsed here before any SDK is imported."""
    typed = config if isinstance(config, ProviderSettings) else settings.check(config)
    kind = typed.kind
    module_name = MODULES[kind]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise errors.StorageMisconfigured(
            f"storage type {kind!r} needs its extra: pip install 'stowage[{kind}]'"
        ) from exc
    try:
        provider: Provider = module.build(typed, data_dir)
    except (ValueError, TypeError) as exc:  # an SDK refusing a value the settings let by
        raise errors.StorageMisconfigured(
            f"{kind} storage: unusable settings ({type(exc).__name__})"
        ) from exc
    return provider
