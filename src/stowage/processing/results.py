"""What a transformation answers with: a kept derivative, or a spooled result."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from stowage.processing.base import Output
from stowage.registry.base import App, FileRecord
from stowage.storage.base import ObjectInfo, Provider


@dataclass
class Derivative:
    """A rendered result in the derivative cache, with what a response needs."""

    record: FileRecord  # the source file's row, with the derivative's type and name
    info: ObjectInfo
    provider: Provider
    local_path: Path | None
    app: App
    key: str  # in the derivative cache
    #: A result kept for a while only (a URL screenshot): the seconds it stays fresh, and
    #: an ETag naming this drawing (its key is drawn again in place when it expires).
    fresh_for: int | None = None
    etag: str | None = None


@dataclass
class Spooled:
    """A result that is not kept (an external URL's): the caller sends and removes it."""

    path: Path
    output: Output
    private: bool  # the app has security on: caches must not share it
    #: The source's name, as a store of it is named (``dispositions.filename``); None:
    #: none usable (a drawn page's, or nothing the origin or URL gave)
    source_name: str | None = None
