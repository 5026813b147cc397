"""CORS for the API origin, so browser code (filestack-js, the console elsewhere) can call it.

Authentication never rides on cookies here (policies travel in the query, the app secret in
an explicit Authorization header), so allowing other origins grants them nothing they could
not do with the same credentials from a server. Preflights are answered before routing.
"""

from __future__ import annotations

from aiohttp import web

from stowage.http.errors import Handler
from stowage.http.resulttags import vary_with

ALLOW_METHODS = "GET, HEAD, POST, PUT, DELETE, OPTIONS"
EXPOSE = "ETag, Content-Length, Content-Range, Content-Disposition, X-File-Name, X-Request-Id"


def cors_middleware(origins: str) -> web.middleware:  # type: ignore[valid-type]
    allowed = {o.strip() for o in origins.split(",") if o.strip()}

    def allow_origin(request: web.Request) -> str | None:
        origin = request.headers.get("Origin")
        if origin is None or not allowed:
            return None
        return "*" if "*" in allowed else (origin if origin in allowed else None)

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        origin = allow_origin(request)
        if (
            request.method == "OPTIONS"
            and origin
            and "Access-Control-Request-Method" in request.headers
        ):
            return web.Response(status=204, headers=_preflight(request, origin))
        response = await handler(request)
        if origin and not response.prepared:
            response.headers["Access-Control-Allow-Origin"] = origin
            response.headers["Access-Control-Expose-Headers"] = EXPOSE
            if origin != "*":  # added to what the answer varies by (auto_image: Accept)
                response.headers["Vary"] = vary_with(response.headers.get("Vary"), "Origin")
        return response

    return middleware


def _preflight(request: web.Request, origin: str) -> dict[str, str]:
    asked = request.headers.get("Access-Control-Request-Headers", "")
    return {
        "Access-Control-Allow-Origin": origin,
        "Access-Control-Allow-Methods": ALLOW_METHODS,
        "Access-Control-Allow-Headers": asked or "Authorization, Content-Type",
        "Access-Control-Max-Age": "86400",
        "Vary": "Origin",
    }
