"""A provider seen through a key prefix: how apps share one default store safely.

When the service's default storage is one bucket for every app, each app's objects live
under ``<api key>/`` in it, so two apps storing the same ``path`` never meet. Callers (and
clients) keep seeing their own keys; only the store sees the prefix.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

from stowage.storage.base import (
    Chunks,
    LocalFiles,
    ObjectInfo,
    Provider,
    WriteOptions,
    open_span,
    open_whole,
)


class PrefixedProvider:
    def __init__(self, inner: Provider, prefix: str) -> None:
        self.inner = inner
        self.prefix = prefix.rstrip("/") + "/"
        self.location = inner.location
        self.default_container = inner.default_container
        self.supports_containers = inner.supports_containers

    def _key(self, key: str) -> str:
        return self.prefix + key

    async def write(
        self, container: str, key: str, chunks: Chunks, options: WriteOptions
    ) -> ObjectInfo:
        return await self.inner.write(container, self._key(key), chunks, options)

    def open(
        self,
        container: str,
        key: str,
        start: int = 0,
        end: int | None = None,
        version: str | None = None,
    ) -> Chunks:
        return self.inner.open(container, self._key(key), start, end, version)

    def open_whole(self, container: str, key: str) -> AsyncIterator[ObjectInfo | bytes]:
        return open_whole(self.inner, container, self._key(key))

    def open_span(
        self, container: str, key: str, start: int, end: int
    ) -> AsyncIterator[ObjectInfo | bytes]:
        return open_span(self.inner, container, self._key(key), start, end)

    async def stat(self, container: str, key: str) -> ObjectInfo:
        return await self.inner.stat(container, self._key(key))

    async def delete(self, container: str, key: str) -> None:
        await self.inner.delete(container, self._key(key))

    async def close(self) -> None:
        await self.inner.close()


class PrefixedLocalProvider(PrefixedProvider):
    """Keeps the sendfile ability of a local inner provider."""

    inner: LocalFiles  # type: ignore[assignment]

    def local_path(self, container: str, key: str) -> Path:
        return self.inner.local_path(container, self._key(key))


def prefixed(inner: Provider, prefix: str) -> Provider:
    if isinstance(inner, LocalFiles):
        return PrefixedLocalProvider(inner, prefix)
    return PrefixedProvider(inner, prefix)
