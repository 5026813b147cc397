"""The storage provider interface.

A provider stores opaque byte streams under ``(container, key)``. It knows
nothing of handles, apps or HTTP. Every method raises only the neutral
``stowage.errors.Storage*`` errors; SDK exceptions never cross this edge.

Contract (checked by ``tests/providers/test_contract.py`` on every provider):

- ``write`` consumes an async iterator of byte chunks of unknown total length
  without holding it whole in memory. It is atomic: when it returns, the new
  object is complete and durable; when it raises (including when the source
  iterator raises, e.g. a client disconnect or a size limit), the previous
  object at that key, if any, is still readable unchanged and no partial
  object is visible.
- ``open`` streams an object, or the byte range ``[start, end]`` (inclusive)
  of it, and raises ``StorageNotFound`` when it is missing. With ``version`` (the
  ``pin_of`` of an ``ObjectInfo`` from ``stat``) it streams exactly that version or raises
  ``StorageVersionChanged`` before yielding anything (an overwrite committed since the
  ``stat``); every request a multi-request read sends is pinned. Callers retry through
  ``core/reading.py``.
- ``stat`` returns size, etag and modification time, or raises
  ``StorageNotFound``.
- ``open_whole`` (``OpensWhole``, optional; ``open_whole()`` below for any provider) reads
  the current version whole with one request where the store names the version it sends:
  it yields that version's ``ObjectInfo`` first, from the response itself, then its bytes.
- ``open_span`` (``OpensSpan``, optional; ``open_span()`` below for any provider) does the
  same for the byte range ``[start, end]``: one request, whose reply names the version (and
  its whole size) the range was cut from.
- ``delete`` removes the object and raises ``StorageNotFound`` when it is
  missing (callers that do not care catch it).
- ``exists`` is ``stat`` without the error.

Optional abilities are separate protocols a provider may also implement;
callers test with ``isinstance``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from stowage.errors import StorageNotFound

#: Bytes a second below which a write to a store is taken as stalled: a request body's
#: time bound is the provider's timeout plus its size at this rate (HTTP clients bound
#: reads, not writes, so a store that stops reading would hold a write for ever).
WRITE_MIN_RATE = 1024 * 1024

Chunks = AsyncIterator[bytes]


@dataclass(frozen=True)
class ObjectInfo:
    size: int
    etag: str
    modified: float  # epoch seconds
    #: The provider's own token for pinning a read to this version (GCS generation, Dropbox
    #: rev); empty where the etag is that token. Opaque to callers: see ``pin_of``.
    version: str = ""


def pin_of(info: ObjectInfo) -> str:
    """What ``open(..., version=)`` takes to read exactly the version ``info`` describes."""
    return info.version or info.etag


@dataclass(frozen=True)
class WriteOptions:
    content_type: str = "application/octet-stream"
    access: str = "private"  # "public" asks the store for public-read where it has such a thing


@runtime_checkable
class Provider(Protocol):
    #: Name reported as ``location`` in metadata ("local", "S3", "gcs", ...).
    location: str
    #: Container used when a request names none.
    default_container: str
    #: False for stores with no containers (Dropbox): a request naming one is refused.
    supports_containers: bool

    async def write(
        self, container: str, key: str, chunks: Chunks, options: WriteOptions
    ) -> ObjectInfo: ...

    def open(
        self,
        container: str,
        key: str,
        start: int = 0,
        end: int | None = None,
        version: str | None = None,
    ) -> Chunks: ...

    async def stat(self, container: str, key: str) -> ObjectInfo: ...

    async def delete(self, container: str, key: str) -> None: ...

    async def close(self) -> None: ...


@runtime_checkable
class LocalFiles(Protocol):
    """A provider whose objects are plain files: the server may sendfile them."""

    def local_path(self, container: str, key: str) -> Path: ...


@runtime_checkable
class Adopts(Protocol):
    """A provider that takes a finished file of this node's disk by renaming it into place
    (a derivative the job process wrote), where ``write`` would copy it; None when the
    file is on another file system (``write`` it then). ``synced``: the file's data are
    already on disk (its writer synced it), and the entry is a cache's, made again if a
    crash loses it: it is renamed at once, without a thread's hand-off."""

    async def adopt(
        self, container: str, key: str, path: Path, synced: bool = False
    ) -> ObjectInfo | None: ...


@runtime_checkable
class Lists(Protocol):
    """A provider that can list the keys under a prefix (used for the pieces of multipart
    uploads kept in a shared store, so leftovers of crashed or retried writes are found)."""

    def keys(self, container: str, prefix: str) -> AsyncIterator[str]: ...


@runtime_checkable
class Recovers(Protocol):
    """A provider that leaves temporary state behind after a crash and can sweep it."""

    async def sweep_temporary(self) -> int: ...


@runtime_checkable
class OpensWhole(Protocol):
    """A provider whose read answers with the version it sends (size and ETag, generation or
    rev in the response): a whole read is one request, not a ``stat`` and a pinned ``open``
    (issue 17: the store's per-request cost is what limits small reads)."""

    def open_whole(self, container: str, key: str) -> AsyncIterator[ObjectInfo | bytes]:
        """Yields the ``ObjectInfo`` of the version opened, then that version's bytes; any
        later request of the same read is pinned to it. Raises ``StorageNotFound``."""
        ...


def open_whole(provider: Provider, container: str, key: str) -> AsyncIterator[ObjectInfo | bytes]:
    """``provider.open_whole``, or a ``stat`` and an ``open`` pinned to what it found."""
    if isinstance(provider, OpensWhole):
        return provider.open_whole(container, key)
    return _stat_then_open(provider, container, key)


async def _stat_then_open(
    provider: Provider, container: str, key: str, start: int = 0, end: int | None = None
) -> AsyncIterator[ObjectInfo | bytes]:
    info = await provider.stat(container, key)
    yield info
    if info.size == 0:
        return
    chunks = provider.open(container, key, start, end, version=pin_of(info))
    try:
        async for chunk in chunks:
            yield chunk
    finally:
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()


@runtime_checkable
class OpensSpan(Protocol):
    """A provider whose ranged read answers with the version it was cut from: a range read
    is one request, so an overwrite cannot land between a ``stat`` and a pinned ``open``."""

    def open_span(
        self, container: str, key: str, start: int, end: int
    ) -> AsyncIterator[ObjectInfo | bytes]:
        """Yields the ``ObjectInfo`` of the whole version the range is of, then the bytes
        ``[start, end]`` of it (fewer when it is shorter). Raises ``StorageNotFound``, and
        ``RangeNotSatisfiable`` when it begins after its end."""
        ...


def open_span(
    provider: Provider, container: str, key: str, start: int, end: int
) -> AsyncIterator[ObjectInfo | bytes]:
    """``provider.open_span``, or a ``stat`` and (when the caller reads on) an ``open`` of the
    range pinned to what it found."""
    if isinstance(provider, OpensSpan):
        return provider.open_span(container, key, start, end)
    return _stat_then_open(provider, container, key, start, end)


@runtime_checkable
class Inventories(Protocol):
    """A provider on this node's disk that can list its stored and temporary files, so
    ``fsck`` finds the ones no handle owns. ``root`` tells two such providers apart."""

    root: Path

    def local_path(self, container: str, key: str) -> Path: ...

    def stored_files(self) -> list[Path]: ...

    def temporary_files(self) -> list[Path]: ...


async def exists(provider: Provider, container: str, key: str) -> bool:
    try:
        await provider.stat(container, key)
    except StorageNotFound:
        return False
    return True
