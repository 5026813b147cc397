"""The HTTP side of ``stowage.edge.bypass``: a large file asked through an edge cache is
answered ``307`` to the origin's public address (``edge_bypass_url``)."""

from __future__ import annotations

from aiohttp import web

from stowage.config import Settings
from stowage.edge.bypass import bypass_location


def edge_bypass(settings: Settings, request: web.Request, size: int) -> web.Response | None:
    location = bypass_location(settings, request.headers, request.path_qs, size)
    if location is None:
        return None
    # Never stored, by the edge cache (not a 200) or by anyone else: the file may change.
    return web.Response(status=307, headers={"Location": location, "Cache-Control": "no-store"})
