"""The edge purge queue contract (``PurgeQueue``), run against every registry."""

from __future__ import annotations

import asyncio
from typing import Any

from stowage.registry.base import EdgePurge
from tests.registry.test_contract import registry  # noqa: F401  (the parametrised fixture)

CACHE = "http://127.0.0.1:9"


def purge(tag: str, due: float = 100.0, cache: str = CACHE) -> EdgePurge:
    return EdgePurge(id=0, cache=cache, tag=tag, next_attempt=due, created=50.0)


async def test_claim_takes_due_rows_once_and_done_deletes(registry: Any) -> None:  # noqa: F811
    await registry.enqueue_purges([purge("A", due=100.0), purge("B", due=500.0)])
    assert await registry.purge_queue_depth() == 2
    assert await registry.claim_purges("w1", now=99.0, lease=30, limit=10) == []
    first = await registry.claim_purges("w1", now=200.0, lease=30, limit=10)
    assert [(p.tag, p.attempts, p.lease_until) for p in first] == [("A", 1, 230.0)]
    assert await registry.claim_purges("w2", now=210.0, lease=30, limit=10) == []
    assert not await registry.finish_purge(first[0].id, "w2", done=True, next_attempt=0)
    assert await registry.finish_purge(first[0].id, "w1", done=True, next_attempt=0)
    assert await registry.purge_queue_depth() == 1


async def test_a_failed_attempt_is_due_again_later(registry: Any) -> None:  # noqa: F811
    await registry.enqueue_purges([purge("A")])
    [claimed] = await registry.claim_purges("w1", now=200.0, lease=30, limit=10)
    assert await registry.finish_purge(claimed.id, "w1", done=False, next_attempt=260.0, error="x")
    assert await registry.claim_purges("w1", now=250.0, lease=30, limit=10) == []
    [again] = await registry.claim_purges("w2", now=260.0, lease=30, limit=10)
    assert again.id == claimed.id and again.attempts == 2 and again.last_error == "x"


async def test_an_expired_lease_is_taken_over(registry: Any) -> None:  # noqa: F811
    await registry.enqueue_purges([purge("A")])
    [held] = await registry.claim_purges("w1", now=200.0, lease=30, limit=10)
    [taken] = await registry.claim_purges("w2", now=231.0, lease=30, limit=10)
    assert taken.id == held.id
    assert not await registry.finish_purge(held.id, "w1", done=True, next_attempt=0)
    assert await registry.finish_purge(taken.id, "w2", done=True, next_attempt=0)


async def test_one_waiting_row_per_cache_and_tag(registry: Any) -> None:  # noqa: F811
    await registry.enqueue_purges([purge("A"), purge("A"), purge("A", cache="http://c2")])
    await registry.enqueue_purges([purge("A")])
    assert await registry.purge_queue_depth() == 2


async def test_concurrent_claims_never_share_a_row(registry: Any) -> None:  # noqa: F811
    await registry.enqueue_purges([purge(f"T{n}") for n in range(40)])
    batches = await asyncio.gather(
        *(registry.claim_purges(f"w{n}", now=200.0, lease=30, limit=7) for n in range(8))
    )
    ids = [p.id for batch in batches for p in batch]
    assert len(ids) == 40 and len(set(ids)) == 40
