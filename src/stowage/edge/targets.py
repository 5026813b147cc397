"""The cache targets of ``edge_cache_urls``, by the scheme of each URL.

A new kind of cache (another CDN's purge API) is one module implementing
``base.CacheTarget`` and one entry here.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

from stowage.config import Settings
from stowage.edge.base import CacheTarget
from stowage.edge.wire import CacheLink

#: URL scheme -> the target for one such URL.
KINDS: dict[str, Callable[[str], CacheTarget]] = {"http": CacheLink, "https": CacheLink}


def build_targets(settings: Settings) -> list[CacheTarget]:
    """One target per configured URL (duplicates once); raises ValueError for a URL of
    no known kind."""
    targets = []
    for url in dict.fromkeys(settings.edge_cache_urls):
        kind = KINDS.get(urlsplit(url).scheme)
        if kind is None:
            raise ValueError(f"edge_cache_urls: not an http(s) URL: {url!r}")
        targets.append(kind(url))
    return targets
