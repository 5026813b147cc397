"""Rate-limit buckets kept by a shared registry (PostgreSQL), so every node spends one
budget per app and per address instead of one each."""

from __future__ import annotations

from stowage.http.ratelimit import CounterStore, Decision
from stowage.registry.base import SharedLimits


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
