"""The OpenAPI document and the interactive reference (Swagger UI, served from the package).

Swagger UI's files are not in git: ``scripts/vendor-web`` installs the pinned
``swagger-ui-dist`` from npm and copies its two files into ``static/vendor/swagger-ui``.
"""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

from stowage import errors
from stowage.http import openapi
from stowage.http.keys import PARTS

STATIC = Path(__file__).parent / "static"
SWAGGER = STATIC / "vendor" / "swagger-ui"
ASSETS = {
    "swagger-ui-bundle.js": "application/javascript",
    "swagger-ui.css": "text/css",
    "docs.js": "application/javascript",
}
PAGE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; base-uri 'none'; frame-ancestors 'none'"
)


async def openapi_json(request: web.Request) -> web.Response:
    doc = openapi.document(request.app[PARTS].settings)
    return web.json_response(doc, headers={"Access-Control-Allow-Origin": "*"})


async def docs_page(request: web.Request) -> web.FileResponse:
    if not (SWAGGER / "swagger-ui-bundle.js").is_file():
        raise errors.NotSupported(
            "the API reference page is not installed: run scripts/vendor-web "
            "(the document itself is at /api/openapi.json)"
        )
    return _file(STATIC / "docs.html", "text/html")


async def docs_asset(request: web.Request) -> web.FileResponse:
    name = request.match_info["name"]
    if name not in ASSETS:
        raise errors.NotFound()
    path = STATIC / name if name == "docs.js" else SWAGGER / name
    if not path.is_file():
        raise errors.NotFound()
    return _file(path, ASSETS[name])


def _file(path: Path, ctype: str) -> web.FileResponse:
    return web.FileResponse(
        path,
        headers={
            "Content-Type": ctype,
            "Content-Security-Policy": PAGE_CSP,
            "X-Content-Type-Options": "nosniff",
            "Cache-Control": "no-cache",
        },
    )
