"""The CDN origin: read-only, on its own port, so user files never share the API's origin."""

from __future__ import annotations

from aiohttp import web

from stowage import errors
from stowage.http.api import download, metadata_handler


async def cdn_file(request: web.Request) -> web.StreamResponse:
    return await download(request, cdn=True)


async def cdn_metadata(request: web.Request) -> web.Response:
    return await metadata_handler(request)


async def cdn_refuse_write(request: web.Request) -> web.Response:
    raise errors.CdnLinkRefused()


def add_routes(app: web.Application) -> None:
    app.router.add_get("/{handle}", cdn_file)
    app.router.add_get("/{handle}/metadata", cdn_metadata)
    app.router.add_delete("/{handle}", cdn_refuse_write)
    app.router.add_post("/{handle}", cdn_refuse_write)
    app.router.add_post("/{handle}/remove", cdn_refuse_write)
