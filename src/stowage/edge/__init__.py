"""The edge cache tier: Varnish in front of the CDN origin, purged by tag on every write.

Responses name their tags (``headers.py``: the handle, and the app); the VCL in
``deploy/varnish/`` stores what the origin marks cacheable and strips the tags. Writes
purge through a ``Purger`` (``base.py``) before they answer; a cache that does not
acknowledge in time gets its purge from a durable queue in the registry (``worker.py``).
See docs/deployment.md (edge cache) and docs/decisions.md.
"""

from stowage.edge.base import NullPurger, Purger, app_tag, record_tags
from stowage.edge.purger import EdgePurger, build_purger
from stowage.edge.sink import PurgingSink

__all__ = [
    "EdgePurger",
    "NullPurger",
    "Purger",
    "PurgingSink",
    "app_tag",
    "build_purger",
    "record_tags",
]
