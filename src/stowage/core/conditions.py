"""Conditional writes: ``If-Match`` / ``If-None-Match`` against the stored object's ETag."""

from __future__ import annotations

from dataclasses import dataclass

from stowage import errors
from stowage.storage.base import Provider


@dataclass(frozen=True)
class Conditions:
    """What the writer saw last: a write proceeds only if the object is still in that state."""

    if_match: str | None = None
    if_none_match: str | None = None

    @property
    def empty(self) -> bool:
        return self.if_match is None and self.if_none_match is None

    async def check(self, provider: Provider, container: str, key: str) -> None:
        """Raises ``PreconditionFailed`` (412) unless the object at ``key`` meets them."""
        if self.empty:
            return
        try:
            etag: str | None = (await provider.stat(container, key)).etag.strip('"')
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
