"""Webhooks: each app's URLs are told about stores, overwrites and deletes.

``Webhooks`` is the core's event sink: ``publish`` only enqueues one delivery row per
URL in the registry; a background worker (``worker.py``) posts them, signed
(``payload.py``), with retries and backoff. See docs/webhooks.md.
"""

from stowage.core.webhooks.payload import event_body, sign, verify
from stowage.core.webhooks.sink import Webhooks

__all__ = ["Webhooks", "event_body", "sign", "verify"]
