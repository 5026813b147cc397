"""Large files asked through an edge cache, sent around it (``edge_bypass_url``).

Varnish 7.1 can only relay a body it must not store through an 8 KiB pipe loop (about
half the origin's speed on a busy machine) or a pass that buffers as fast as the origin
sends (unbounded memory). With a public address for the origin, a large file is
answered ``307`` there instead: the client fetches it from the origin directly, at the
origin's speed, and the cache holds nothing. The VCL marks every request it forwards
(``VIA_HEADER``, removed from clients' requests), so a client at the origin's own
address is never sent round in a loop.
"""

from __future__ import annotations

from collections.abc import Mapping

from stowage.config import Settings

#: Set by the VCL on every request it sends to the origin (fetches and pipes).
VIA_HEADER = "X-Edge-Via"


def bypass_location(
    settings: Settings, request_headers: Mapping[str, str], path_qs: str, size: int
) -> str | None:
    """Where to send a request for a file of ``size`` bytes, or None to serve it here."""
    if not settings.edge_bypass_url or VIA_HEADER not in request_headers:
        return None
    if size <= settings.edge_max_object_bytes:
        return None
    return settings.edge_bypass_url.rstrip("/") + path_qs
