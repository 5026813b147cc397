"""The edge cache tier: Varnish in front of the CDN origin, purged by tag on every write.

Responses name their tags (``headers.py``: the handle, and the app); the VCL in
``deploy/varnish/`` stores what the origin marks cacheable and strips the tags. A write
that makes cached answers stale purges the cache targets (``base.py``, ``targets.py``;
Varnish: ``wire.py``) as its own step before it answers (``purger.py``); a cache that
does not acknowledge in time gets its purge from a durable queue in the registry
(``worker.py``). See docs/deployment.md (edge cache) and docs/decisions.md.
"""

from stowage.edge.base import CacheTarget, NullPurger, app_tag, record_tags, stale_tags
from stowage.edge.purger import EdgePurger, build_purger

__all__ = [
    "CacheTarget",
    "EdgePurger",
    "NullPurger",
    "app_tag",
    "build_purger",
    "record_tags",
    "stale_tags",
]
