"""The picker's start-up call (``/prefetch``) and the cloud API of filestack-js's
``cloudApiUrl`` (``cloud.<cname>``): thin handlers over ``core/picker.py``."""

from __future__ import annotations

from aiohttp import web

from stowage.core import picker
from stowage.http import strict
from stowage.http.keys import PARTS


async def prefetch_handler(request: web.Request) -> web.Response:
    body = await strict.read_json(request)
    return web.json_response(await picker.prefetch(request.app[PARTS].providers, body))


async def cloud_drive_handler(request: web.Request) -> web.Response:
    """``/folder/list``, ``/store/``, ``/metadata``, ``/auth/logout``, ``/recording/...``:
    every one needs a third-party account."""
    raise picker.cloud_drive(f"{request.method} {request.path}")
