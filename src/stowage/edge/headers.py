"""What the CDN origin tells the edge cache about a file response (the VCL strips both).

``xkey`` names the tags the response is purged by: its handle and its app (a
transformation adds every stored file it reads: ``http/transform.py``). ``X-Edge-TTL``
is present only on responses the cache may store, with how long: files of apps without
security, not asked with ``cache=false``, not larger than ``edge_max_object_bytes``. The
origin decides, not the VCL, so a rule change needs no VCL change, and a response
without the header (an error, a secured file, a large one) is never stored.
"""

from __future__ import annotations

from stowage.config import Settings
from stowage.edge.base import app_tag
from stowage.registry.base import FileRecord

TAG_HEADER = "xkey"
TTL_HEADER = "X-Edge-TTL"
#: Set by the VCL on requests it pipes: their response goes to the client untouched.
PIPED_HEADER = "X-Edge-Piped"


def origin_headers(
    settings: Settings,
    record: FileRecord,
    size: int,
    *,
    secured: bool,
    cacheable: bool,
    max_age: int | None,
) -> dict[str, str]:
    if not settings.edge_cache_urls:  # no cache to purge: nothing may be stored
        return {}
    headers = {TAG_HEADER: f"{record.handle} {app_tag(record.api_key)}"}
    if cacheable and not secured and size <= settings.edge_max_object_bytes:
        ttl = settings.edge_ttl if max_age is None else min(max_age, settings.edge_ttl)
        headers[TTL_HEADER] = str(ttl)
    return headers


def without_edge_headers(headers: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k not in (TAG_HEADER, TTL_HEADER)}
