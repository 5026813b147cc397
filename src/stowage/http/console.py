"""The web console: static files from the package, at /console on the API origin."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

from aiohttp import web

from stowage import errors
from stowage.http.keys import PARTS

CONSOLE = Path(__file__).parent / "static" / "console"
TYPES = {".html": "text/html", ".js": "application/javascript", ".css": "text/css"}
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; "
    "media-src 'self' blob:; frame-src 'self' blob:; object-src 'self' blob:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
# An origin as CSP accepts it: nothing that could end the directive or add another.
_ORIGIN = re.compile(r"https?://[A-Za-z0-9.\-\[\]:]+")


def _csp(request: web.Request) -> str:
    """The thumbnails and previews come from the CDN origin (transformation URLs), which
    is another origin than the console's: allow it for images only."""
    parts = urlsplit(request.app[PARTS].settings.cdn_url())
    origin = f"{parts.scheme}://{parts.netloc}"
    if not _ORIGIN.fullmatch(origin):
        return CSP
    return CSP.replace("img-src 'self'", f"img-src 'self' {origin}", 1)


async def console_page(request: web.Request) -> web.FileResponse:
    return _file(CONSOLE / "index.html", _csp(request))


async def console_asset(request: web.Request) -> web.FileResponse:
    name = request.match_info["name"]
    path = CONSOLE / name
    if "/" in name or name.startswith(".") or not path.is_file() or path.suffix not in TYPES:
        raise errors.NotFound()
    return _file(path, _csp(request))


def _file(path: Path, csp: str) -> web.FileResponse:
    return web.FileResponse(
        path,
        headers={
            "Content-Type": TYPES[path.suffix],
            "Content-Security-Policy": csp,
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
            "Cache-Control": "no-cache",
        },
    )
