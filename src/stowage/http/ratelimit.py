"""Rate limits at the HTTP edge: 429 with ``Retry-After`` (the buckets: ``core/ratelimits.py``).

Every response carries ``RateLimit-*`` and Filestack's ``Filestack-Limit``/``-Remaining``/
``-Reset`` for the tighter of the two buckets.
"""

from __future__ import annotations

import math

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from stowage import errors
from stowage.core.ratelimits import Decision, RateLimiter

EXEMPT = ("/healthz", "/readyz")


def headers(decision: Decision) -> dict[str, str]:
    reset = str(math.ceil(decision.reset))
    values = {
        "RateLimit-Limit": str(decision.limit),
        "RateLimit-Remaining": str(decision.remaining),
        "RateLimit-Reset": reset,
        "Filestack-Limit": str(decision.limit),
        "Filestack-Remaining": str(decision.remaining),
        "Filestack-Reset": reset,
    }
    if not decision.allowed:
        values["Retry-After"] = str(max(1, math.ceil(decision.retry_after)))
    return values


def limit_middleware(limiter: RateLimiter) -> Middleware:
    @web.middleware
    async def rate_limit(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path in EXEMPT:
            return await handler(request)
        decision = await limiter.check(request.query.get("key"), request.remote)
        if decision is None:
            return await handler(request)
        if not decision.allowed:
            error = errors.RateLimited(retry_after=math.ceil(decision.retry_after))
            error.headers.update(headers(decision))
            raise error
        response = await handler(request)
        if not response.prepared:
            response.headers.update(headers(decision))
        return response

    return rate_limit
