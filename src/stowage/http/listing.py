"""GET /api/files: one page of an app's files."""

from __future__ import annotations

from aiohttp import web

from stowage.core import listing
from stowage.http import inputs
from stowage.http.keys import SERVICE


async def list_handler(request: web.Request) -> web.Response:
    q = request.query
    service = request.app[SERVICE]
    page = await listing.list_files(
        service.registry,
        service.providers,
        q.get("key"),
        inputs.credentials(request),
        q.get("after"),
        listing.parse_limit(q.get("limit")),
    )
    response = web.json_response(page.public())
    response.headers["Cache-Control"] = "no-store"
    return response
