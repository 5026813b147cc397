"""Storage providers and the one place that builds them from configuration.

Each provider is one module exposing ``from_config(config, data_dir)``; its SDK
is imported only there and installed as an extra (``pip install stowage[s3]``).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from stowage import errors
from stowage.storage.base import Provider

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


def build_provider(config: Mapping[str, Any], data_dir: Path) -> Provider:
    kind = str(config.get("type", ""))
    module_name = MODULES.get(kind)
    if module_name is None:
        raise errors.StorageMisconfigured(f"unknown storage type {kind!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise errors.StorageMisconfigured(
            f"storage type {kind!r} needs its extra: pip install 'stowage[{kind}]'"
        ) from exc
    provider: Provider = module.from_config(config, data_dir)
    return provider
