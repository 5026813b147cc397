"""The webhook delivery queue contract, run against every registry implementation."""

from __future__ import annotations

import asyncio

from stowage.registry.base import (
    WEBHOOK_DELIVERED,
    WEBHOOK_DELIVERING,
    WEBHOOK_FAILED,
    WEBHOOK_PENDING,
    Registry,
    WebhookDelivery,
)
from tests.registry.test_contract import registry  # noqa: F401  (the parametrised fixture)


def delivery(n: int, api_key: str = "app1", due: float = 100.0) -> WebhookDelivery:
    return WebhookDelivery(
        id=0,
        event_id=1000 + n,
        api_key=api_key,
        url=f"http://127.0.0.1:9/hook{n}",
        action="fp.upload",
        handle="H" * 20,
        body=f'{{"id": {1000 + n}}}',
        next_attempt=due,
        created=50.0 + n,
    )


async def test_enqueue_assigns_ids_and_log_lists_newest_first(registry: Registry) -> None:  # noqa: F811
    queued = await registry.enqueue_webhooks([delivery(1), delivery(2, "app2")])
    assert [d.status for d in queued] == [WEBHOOK_PENDING] * 2
    assert queued[0].id and queued[1].id > queued[0].id
    log = await registry.webhook_log()
    assert [d.id for d in log] == [queued[1].id, queued[0].id]
    assert log[1].body == '{"id": 1001}' and log[1].url == "http://127.0.0.1:9/hook1"
    assert [d.id for d in await registry.webhook_log("app1")] == [queued[0].id]
    assert len(await registry.webhook_log(limit=1)) == 1


async def test_claim_takes_due_rows_once(registry: Registry) -> None:  # noqa: F811
    await registry.enqueue_webhooks([delivery(1, due=100.0), delivery(2, due=500.0)])
    assert await registry.claim_webhooks("w1", now=99.0, lease=30, limit=10) == []
    first = await registry.claim_webhooks("w1", now=200.0, lease=30, limit=10)
    assert [d.event_id for d in first] == [1001]
    assert first[0].status == WEBHOOK_DELIVERING and first[0].attempts == 1
    assert first[0].lease_until == 230.0
    assert await registry.claim_webhooks("w2", now=210.0, lease=30, limit=10) == []


async def test_concurrent_claims_never_share_a_row(registry: Registry) -> None:  # noqa: F811
    await registry.enqueue_webhooks([delivery(n) for n in range(40)])
    batches = await asyncio.gather(
        *(registry.claim_webhooks(f"w{n}", now=200.0, lease=30, limit=7) for n in range(8))
    )
    ids = [d.id for batch in batches for d in batch]
    assert len(ids) == 40 and len(set(ids)) == 40


async def test_expired_lease_is_taken_over_and_old_holder_cannot_finish(
    registry: Registry,  # noqa: F811
) -> None:
    await registry.enqueue_webhooks([delivery(1)])
    (held,) = await registry.claim_webhooks("w1", now=200.0, lease=30, limit=10)
    assert await registry.claim_webhooks("w2", now=229.0, lease=30, limit=10) == []
    (taken,) = await registry.claim_webhooks("w2", now=231.0, lease=30, limit=10)
    assert taken.id == held.id and taken.attempts == 2
    assert not await registry.finish_webhook(held.id, "w1", WEBHOOK_DELIVERED, now=232.0)
    assert await registry.finish_webhook(
        held.id, "w2", WEBHOOK_DELIVERED, now=233.0, response_code=204
    )
    assert not await registry.finish_webhook(held.id, "w2", WEBHOOK_FAILED, now=234.0)
    (logged,) = await registry.webhook_log()
    assert (logged.status, logged.response_code, logged.attempts) == (WEBHOOK_DELIVERED, 204, 2)


async def test_retry_is_claimed_again_when_due(registry: Registry) -> None:  # noqa: F811
    await registry.enqueue_webhooks([delivery(1)])
    (d,) = await registry.claim_webhooks("w1", now=200.0, lease=30, limit=10)
    assert await registry.finish_webhook(
        d.id,
        "w1",
        WEBHOOK_PENDING,
        now=201.0,
        next_attempt=260.0,
        response_code=500,
        error="the receiver answered 500",
    )
    (logged,) = await registry.webhook_log()
    assert logged.status == WEBHOOK_PENDING and logged.last_error == "the receiver answered 500"
    assert await registry.claim_webhooks("w1", now=259.0, lease=30, limit=10) == []
    (again,) = await registry.claim_webhooks("w1", now=260.0, lease=30, limit=10)
    assert again.attempts == 2


async def test_prune_drops_only_old_finished_rows(registry: Registry) -> None:  # noqa: F811
    queued = await registry.enqueue_webhooks([delivery(n) for n in range(3)])
    claimed = await registry.claim_webhooks("w", now=200.0, lease=30, limit=2)
    await registry.finish_webhook(claimed[0].id, "w", WEBHOOK_DELIVERED, now=300.0)
    await registry.finish_webhook(claimed[1].id, "w", WEBHOOK_FAILED, now=900.0)
    assert await registry.prune_webhooks(before=500.0) == 1
    left = {d.id for d in await registry.webhook_log()}
    assert left == {claimed[1].id, queued[2].id}
