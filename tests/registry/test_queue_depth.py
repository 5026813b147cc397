"""The webhook queue depth behind the /metrics gauge, on every registry."""

from __future__ import annotations

from stowage.registry.base import WEBHOOK_DELIVERED, Registry, WebhookDelivery
from tests.registry.test_contract import registry  # noqa: F401  (the parametrised fixture)


def delivery(n: int) -> WebhookDelivery:
    return WebhookDelivery(
        0, n, "app1", "http://127.0.0.1:9/", "fp.upload", "H" * 20, "{}", next_attempt=100.0
    )


async def test_depth_counts_pending_and_delivering_only(registry: Registry) -> None:  # noqa: F811
    depth = registry.webhook_queue_depth  # type: ignore[attr-defined]
    assert await depth() == 0
    await registry.enqueue_webhooks([delivery(n) for n in range(4)])
    assert await depth() == 4
    claimed = await registry.claim_webhooks("w1", now=200.0, lease=30.0, limit=2)
    assert await depth() == 4  # two pending, two delivering
    assert await registry.finish_webhook(claimed[0].id, "w1", WEBHOOK_DELIVERED, now=210.0)
    assert await depth() == 3
