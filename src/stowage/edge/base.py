"""The purger interface the rest of Stowage sees, and the tags it purges."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from stowage.registry.base import FileRecord


class Purger(Protocol):
    async def purge(self, tags: Sequence[str]) -> None:
        """Purges ``tags`` on every cache before returning; never raises. A cache that
        does not acknowledge in time gets the purge later, from the queue."""
        ...

    async def start(self) -> None: ...
    async def close(self) -> None: ...


class NullPurger:
    """No edge cache configured."""

    async def purge(self, tags: Sequence[str]) -> None:
        return None

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None


def app_tag(api_key: str) -> str:
    """Every cached response of an app: purged when the app's security changes."""
    return f"app:{api_key}"


def record_tags(record: FileRecord) -> list[str]:
    """What a write of ``record`` purges: everything served from its handle."""
    return [record.handle]
