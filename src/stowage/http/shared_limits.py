"""Rate-limit buckets kept by a shared registry (PostgreSQL), so every node spends one
budget per app and per address instead of one each."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from stowage.http.ratelimit import CounterStore, Decision
from stowage.registry.base import Registry

TakeToken = Callable[[str, float, float], Awaitable[tuple[float, bool]]]


class RegistryBuckets:
    def __init__(self, take_token: TakeToken) -> None:
        self._take = take_token

    async def take(self, key: str, rate: float, burst: float, now: float) -> Decision:
        """``now`` (this node's monotonic clock) is unused: the registry's clock is shared."""
        tokens, allowed = await self._take(key, rate, burst)
        return Decision(
            allowed,
            int(burst),
            int(tokens),
            (burst - tokens) / rate,
            0.0 if allowed else (1.0 - tokens) / rate,
        )


def shared_buckets(registry: Registry) -> CounterStore | None:
    """The registry's buckets when it has them (PostgreSQL); None: in-process buckets."""
    take: TakeToken | None = getattr(registry, "take_token", None)
    return RegistryBuckets(take) if take is not None else None
