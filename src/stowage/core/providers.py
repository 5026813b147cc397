"""Apps and their storage: who an API key is, and which provider serves one of its stores.

Every operation starts here: the app of a key, then ``provider_for`` (the app's own
configuration of a provider, or the service's default storage for ``S3``). Providers are
built once per configuration and kept until ``close``. An app whose configuration of a
provider cannot be used gets ``STORAGE_MISCONFIGURED`` for that provider alone.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from stowage import errors
from stowage.config import Settings
from stowage.registry.base import App, AppRows
from stowage.storage import API_PROVIDERS, build_provider
from stowage.storage.base import Provider
from stowage.storage.prefixed import prefixed
from stowage.storage.settings import LocalSettings, ProviderSettings

log = logging.getLogger("stowage.core")


class Providers:
    def __init__(self, settings: Settings, apps: AppRows) -> None:
        self.settings = settings
        self.apps = apps
        self._providers: dict[tuple[str, str, str], Provider] = {}

    async def close(self) -> None:
        for provider in self._providers.values():
            await provider.close()
        self._providers.clear()

    async def app(self, api_key: str | None) -> App:
        if not api_key:
            raise errors.Unauthenticated("the key query parameter (API key) is required")
        app = await self.apps.get_app(api_key)
        if app is None:
            raise errors.UnknownApiKey()
        return app

    def provider_for(self, app: App, api_name: str) -> Provider:
        if api_name not in API_PROVIDERS:
            raise errors.InvalidParameter(
                f"unknown provider {api_name!r}; one of {', '.join(API_PROVIDERS)}",
                parameter="provider",
            )
        config = app.storage.get(api_name)
        if config is None:
            if api_name != "S3":
                raise errors.ProviderNotEnabled(
                    f"storage provider {api_name!r} is not enabled for this app", provider=api_name
                )
            return self.default_provider(app)
        return self._cached(app.api_key, api_name, config)

    def default_provider(self, app: App) -> Provider:
        """The service's own storage: a folder per app on the default local disk; in a store
        shared by all apps (a bucket), a key prefix per app, so apps never see each other."""
        default = self.settings.default_storage
        if isinstance(default, LocalSettings) and default.root is None:
            own = dataclasses.replace(default, root=str(self._local_root / app.api_key))
            return self._cached("", app.api_key, own)
        return prefixed(self._cached("", "default", default), app.api_key)

    def shared_default_store(self) -> Provider | None:
        """The default storage as one store for all apps (no app prefix), or None when it is
        local disk, which only a shared mount would make common to several nodes."""
        default = self.settings.default_storage
        if isinstance(default, LocalSettings):
            return None
        return self._cached("", "default", default)

    def local_defaults(self) -> list[Provider]:
        """The default local disk of every app that has stored there."""
        root = self._local_root
        if not isinstance(self.settings.default_storage, LocalSettings) or not root.exists():
            return []
        return [
            self.default_provider(App(api_key=p.name, secret=""))
            for p in sorted(root.iterdir())
            if p.is_dir()
        ]

    @property
    def _local_root(self) -> Path:
        return self.settings.data_dir / "storage"

    async def configured(self) -> list[Provider]:
        """Every provider the apps configure; a misconfigured one is reported and skipped,
        so one app's mistake never stops the others."""
        found: list[Provider] = []
        for app in await self.apps.list_apps():
            for api_name in app.storage:
                try:
                    found.append(self.provider_for(app, api_name))
                except errors.StowageError as exc:
                    log.warning(
                        "storage %s of app %s is misconfigured: %s",
                        api_name,
                        app.api_key,
                        exc.message,
                    )
        return found

    def _cached(
        self, scope: str, name: str, config: ProviderSettings | Mapping[str, Any]
    ) -> Provider:
        key = (scope, name, _fingerprint(config))
        provider = self._providers.get(key)
        if provider is None:  # an app's table is parsed here, once, into typed settings
            provider = build_provider(config, self.settings.data_dir)
            self._providers[key] = provider
        return provider


def _fingerprint(config: ProviderSettings | Mapping[str, Any]) -> str:
    """Equal for equal settings, secrets included (a changed credential is a new provider)."""
    if isinstance(config, ProviderSettings):
        config = {"type": config.kind, **dataclasses.asdict(config)}
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()
