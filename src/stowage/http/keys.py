"""What the API and CDN applications hold for their handlers (set up in ``http/app.py``):
the assembly (``stowage/assembly.py``), from which each handler takes the parts it uses."""

from __future__ import annotations

from aiohttp import web

from stowage.assembly import Assembly

PARTS: web.AppKey[Assembly] = web.AppKey("parts", Assembly)
