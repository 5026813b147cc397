"""GET /api/files: one page of an app's files."""

from __future__ import annotations

from aiohttp import web

from stowage.core import listing
from stowage.http import inputs
from stowage.http.keys import PARTS


async def list_handler(request: web.Request) -> web.Response:
    q = request.query
    parts = request.app[PARTS]
    page = await listing.list_files(
        parts.registry,
        parts.providers,
        q.get("key"),
        inputs.credentials(request),
        q.get("after"),
        listing.parse_limit(q.get("limit")),
    )
    response = web.json_response(page.public())
    response.headers["Cache-Control"] = "no-store"
    return response
