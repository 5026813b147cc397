"""Conditional writes: ``If-Match`` / ``If-None-Match`` against the stored file's ETag.

A stored file's ETag names its content: the SHA-256 its row records (a row imported
without one: its handle and version). Not the store's own tag: on local disk that is the
mtime and size, which two files of one size written in the same tick share.
"""

from __future__ import annotations

import hashlib
import re
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
        if self.if_match is not None and (
            etag is None or not matches(self.if_match, etag, strong=True)
        ):
            raise errors.PreconditionFailed("If-Match: the file has changed", etag=etag)
        if (
            self.if_none_match is not None
            and etag is not None
            and matches(self.if_none_match, etag)
        ):
            raise errors.PreconditionFailed("If-None-Match: the file exists", etag=etag)


def matches(header: str, etag: str, *, strong: bool = False) -> bool:
    """An entity-tag list (``"a", W/"b"``) or ``*`` against one ETag. ``strong``: the
    comparison of If-Match and If-Range (RFC 9110 8.8.3.2), where a weak tag matches
    nothing; If-None-Match compares weakly. A list that is no entity-tag list (a tag
    without its quotes) matches nothing."""
    if header.strip() == "*":
        return True
    tags = _entity_tags(header)
    return tags is not None and any(
        opaque == etag and not (strong and weak) for weak, opaque in tags
    )


_ENTITY_TAG = re.compile(r'[ \t]*(W/)?"([\x21\x23-\x7e\x80-\xff]*)"[ \t]*')  # OWS: SP, HTAB


def _entity_tags(header: str) -> list[tuple[bool, str]] | None:
    found: list[tuple[bool, str]] = []
    for item in header.split(","):
        if not item.strip():
            continue  # a list may hold empty elements
        tag = _ENTITY_TAG.fullmatch(item)
        if tag is None:
            return None
        found.append((tag[1] is not None, tag[2]))
    return found
