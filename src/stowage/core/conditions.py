"""Conditional writes: ``If-Match`` / ``If-None-Match`` against the stored file's ETag.

A stored file's ETag names its content: the SHA-256 its row records (a row imported
without one: its handle and version). Not the store's own tag: on local disk that is the
mtime and size, which two files of one size written in the same tick share.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from stowage import errors
from stowage.registry.base import FileRecord
from stowage.storage.base import Provider


def content_etag(record: FileRecord) -> str:
    """The ETag of a stored file's current content, read and written alike."""
    if record.sha256:
        return record.sha256[:32]
    named = f"{record.handle}@{record.version}:{record.size}"
    return hashlib.sha256(named.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Conditions:
    """What the writer saw last: a write proceeds only if the object is still in that state."""

    if_match: str | None = None
    if_none_match: str | None = None

    @property
    def empty(self) -> bool:
        return self.if_match is None and self.if_none_match is None

    async def check(
        self, provider: Provider, container: str, key: str, record: FileRecord | None = None
    ) -> None:
        """Raises ``PreconditionFailed`` (412) unless the file meets them: ``record``'s
        content tag, or, for a path with no row, the object's at ``key``."""
        if self.empty:
            return
        etag: str | None
        if record is not None:
            etag = content_etag(record)
        else:
            try:
                etag = (await provider.stat(container, key)).etag.strip('"')
            except errors.StorageNotFound:
                etag = None
        if self.if_match is not None and (etag is None or not matches(self.if_match, etag)):
            raise errors.PreconditionFailed("If-Match: the file has changed", etag=etag)
        if (
            self.if_none_match is not None
            and etag is not None
            and matches(self.if_none_match, etag)
        ):
            raise errors.PreconditionFailed("If-None-Match: the file exists", etag=etag)


def matches(header: str, etag: str) -> bool:
    """An ETag list (``"a", W/"b"``) or ``*`` against one ETag."""
    tags = [t.strip().removeprefix("W/").strip('"') for t in header.split(",")]
    return "*" in tags or etag in tags
