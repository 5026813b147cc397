"""Per-app and per-address rate limits: token buckets, 429 with ``Retry-After``.

Every response carries ``RateLimit-*`` and Filestack's ``Filestack-Limit``/``-Remaining``/
``-Reset`` for the tighter of the two buckets. Buckets live behind ``CounterStore`` so a
store shared by many nodes can replace the in-process one.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Protocol

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from stowage import errors
from stowage.config import Settings

MAX_BUCKETS = 100_000
EXEMPT = ("/healthz", "/readyz")


@dataclass(frozen=True)
class Decision:
    allowed: bool
    limit: int  # bucket size: requests that may pass at once
    remaining: int
    reset: float  # seconds until the bucket is full again
    retry_after: float  # seconds until one request may pass (0 when allowed)


class CounterStore(Protocol):
    async def take(self, key: str, rate: float, burst: float, now: float) -> Decision: ...


class MemoryBuckets:
    """Token buckets in this process; the least recently used are forgotten past a bound."""

    def __init__(self, max_buckets: int = MAX_BUCKETS) -> None:
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        self._max = max_buckets

    async def take(self, key: str, rate: float, burst: float, now: float) -> Decision:
        tokens, stamp = self._buckets.pop(key, (burst, now))
        tokens = min(burst, tokens + (now - stamp) * rate)
        allowed = tokens >= 1.0
        if allowed:
            tokens -= 1.0
        self._buckets[key] = (tokens, now)
        while len(self._buckets) > self._max:
            self._buckets.popitem(last=False)
        return Decision(
            allowed,
            int(burst),
            int(tokens),
            (burst - tokens) / rate,
            0.0 if allowed else (1.0 - tokens) / rate,
        )


class RateLimiter:
    def __init__(self, settings: Settings, store: CounterStore | None = None) -> None:
        self.settings = settings
        self.store = store or MemoryBuckets()

    async def check(self, api_key: str | None, address: str | None) -> Decision | None:
        """The tighter decision of the app's and the address's bucket (None: no limits)."""
        s = self.settings
        now = time.monotonic()
        decisions = [
            await self.store.take(f"{kind}:{name}", rate, max(1.0, rate * s.rate_limit_burst), now)
            for kind, name, rate in (
                ("app", api_key, s.rate_limit_app),
                ("ip", address, s.rate_limit_ip),
            )
            if name and rate > 0
        ]
        if not decisions:
            return None
        refused = [d for d in decisions if not d.allowed]
        if refused:
            return max(refused, key=lambda d: d.retry_after)
        return min(decisions, key=lambda d: d.remaining)


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
