"""What the edge tier is to the rest of Stowage: cache targets, and the tags a change
makes stale.

A cache target is one cache that can be purged by tag (Varnish: ``wire.py``). Another
CDN's purge API is one more module implementing ``CacheTarget``, named in ``targets.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from stowage.core import events
from stowage.core.events import Change
from stowage.registry.base import FileRecord


class CacheTarget(Protocol):
    @property
    def name(self) -> str:
        """Names the target in the purge queue (Varnish: its admin URL)."""
        ...

    async def purge(self, tags: Sequence[str], timeout: float) -> str | None:
        """Purges ``tags``; None when the cache acknowledged within ``timeout``, else why
        it did not. Never raises."""
        ...

    def warm(self) -> None:
        """Prepares the first purge (e.g. opens a connection) without waiting for it."""
        ...

    async def close(self) -> None: ...


class NullPurger:
    """No edge cache configured."""

    async def purge(self, change: Change) -> None:
        return None

    async def publish(self, change: Change) -> None:
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


def stale_tags(change: Change) -> list[str]:
    """The tags of the cached answers ``change`` made wrong (none for a new file or app:
    the origin marks no error cacheable)."""
    if change.action in (events.OVERWRITE, events.DELETE) and change.record is not None:
        return record_tags(change.record)
    if change.action == events.APP_DELETE:
        return [app_tag(change.app.api_key)]
    # Cached copies were stored under the old rules: a file of an app that turned
    # security on must no longer be served to a URL without a policy.
    before, now = change.previous_app, change.app
    rules_changed = before is not None and (before.security, before.storage) != (
        now.security,
        now.storage,
    )
    if change.action == events.APP_UPDATE and rules_changed:
        return [app_tag(now.api_key)]
    return []
