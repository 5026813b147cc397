"""What the API and CDN applications hold for their handlers (set up in ``http/app.py``)."""

from __future__ import annotations

from aiohttp import web

from stowage.core.service import Stowage
from stowage.core.uploads import Uploads

SERVICE: web.AppKey[Stowage] = web.AppKey("service", Stowage)
UPLOADS: web.AppKey[Uploads] = web.AppKey("uploads", Uploads)
