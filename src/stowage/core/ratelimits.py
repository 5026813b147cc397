"""Per-app and per-address rate limits: token buckets (no HTTP: ``http/ratelimit.py``
turns a decision into headers and 429s).

Buckets live behind ``CounterStore``: in this process (``MemoryBuckets``), or in a
registry shared by many nodes (PostgreSQL: ``RegistryBuckets``), so that every node
spends one budget per app and per address instead of one each.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Protocol

from stowage.config import Settings
from stowage.registry.base import SharedLimits

MAX_BUCKETS = 100_000


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

    async def charge_app(self, api_key: str) -> Decision | None:
        """One request against the app's bucket alone: for a request whose app is known
        only once its file is read (a CDN URL without ``?key=``)."""
        s = self.settings
        if s.rate_limit_app <= 0:
            return None
        burst = max(1.0, s.rate_limit_app * s.rate_limit_burst)
        return await self.store.take(f"app:{api_key}", s.rate_limit_app, burst, time.monotonic())


class RegistryBuckets:
    def __init__(self, limits: SharedLimits) -> None:
        self._limits = limits

    async def take(self, key: str, rate: float, burst: float, now: float) -> Decision:
        """``now`` (this node's monotonic clock) is unused: the registry's clock is shared."""
        tokens, allowed = await self._limits.take_token(key, rate, burst)
        return Decision(
            allowed,
            int(burst),
            int(tokens),
            (burst - tokens) / rate,
            0.0 if allowed else (1.0 - tokens) / rate,
        )


def shared_buckets(registry: object) -> CounterStore | None:
    """The registry's buckets when it has them (PostgreSQL); None: in-process buckets."""
    return RegistryBuckets(registry) if isinstance(registry, SharedLimits) else None
