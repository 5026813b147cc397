"""What the ecosystem adds to both origins: request ids, metrics, the list endpoint,
the OpenAPI document and its reference page, and the web console."""

from __future__ import annotations

from aiohttp import web
from aiohttp.typedefs import Middleware

from stowage.http import console, docs, listing, observe
from stowage.http.observe import RID, record

__all__ = ["RID", "add_api", "add_cdn", "middlewares", "record"]


def middlewares(error: Middleware, *inner: Middleware) -> list[Middleware]:
    """Request ids and metrics outside the error middleware, provider errors inside it."""
    return [observe.observe_middleware, error, observe.provider_errors_middleware, *inner]


def add_api(app: web.Application) -> None:
    listing.add_routes(app)
    docs.add_routes(app)
    console.add_routes(app)
    observe.install(app, metrics_route=True)


def add_cdn(app: web.Application) -> None:
    observe.install(app, metrics_route=False)
