"""The CDN origin: read-only, on its own port, so user files never share the API's origin.

Every GET is parsed as one of the URL forms of ``cdnpath`` (handle, security and cache
tasks, an API key, ``/metadata``). ``POST /process`` is sent on to the API origin.
"""

from __future__ import annotations

from aiohttp import web

from stowage import errors
from stowage.http import cdnpath, preview, transform
from stowage.http.api import download, metadata_handler


async def cdn_get(request: web.Request) -> web.StreamResponse:
    path = cdnpath.parse(request.raw_path.split("?", 1)[0])
    if path.preview is not None:  # /preview/<HANDLE>: the viewer page
        return await preview.page(request, path)
    if path.tasks or path.url:
        return await transform.transform(request, path, cdn=True)
    if path.metadata:
        return await metadata_handler(request, handle=path.handle, path=path)
    return await download(request, cdn=True, handle=path.handle, path=path)


async def cdn_post_chain(request: web.Request) -> web.StreamResponse:
    path = cdnpath.parse(request.raw_path.split("?", 1)[0])
    if not path.tasks:
        raise errors.CdnLinkRefused()
    return await transform.transform(request, path, cdn=True)


async def cdn_refuse_write(request: web.Request) -> web.Response:
    raise errors.CdnLinkRefused()
