"""The web console: static files from the package, at /console on the API origin."""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

from stowage import errors

CONSOLE = Path(__file__).parent / "static" / "console"
TYPES = {".html": "text/html", ".js": "application/javascript", ".css": "text/css"}
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; "
    "media-src 'self' blob:; frame-src 'self' blob:; object-src 'self' blob:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


async def console_page(request: web.Request) -> web.FileResponse:
    return _file(CONSOLE / "index.html")


async def console_asset(request: web.Request) -> web.FileResponse:
    name = request.match_info["name"]
    path = CONSOLE / name
    if "/" in name or name.startswith(".") or not path.is_file() or path.suffix not in TYPES:
        raise errors.NotFound()
    return _file(path)


def _file(path: Path) -> web.FileResponse:
    return web.FileResponse(
        path,
        headers={
            "Content-Type": TYPES[path.suffix],
            "Content-Security-Policy": CSP,
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
            "Cache-Control": "no-cache",
        },
    )
