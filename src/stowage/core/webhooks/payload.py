"""What a webhook delivery carries: the body (Filestack's shape) and its signature.

``FS-Signature`` is the lowercase hex HMAC-SHA256 of the app secret over
``f"{FS-Timestamp}.{raw body}"``, which is what the Filestack SDKs verify.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

from stowage.core import events
from stowage.registry.base import FileRecord


def event_body(event_id: int, action: str, record: FileRecord, url: str, timestamp: int) -> str:
    """The JSON text sent (and signed) for one event; ASCII only, so bytes == text."""
    body = {
        "id": event_id,
        "action": action,
        "timestamp": timestamp,
        "text": _text(action, record, url),
    }
    return json.dumps(body)


def _text(action: str, record: FileRecord, url: str) -> dict[str, Any]:
    common: dict[str, Any] = {
        "url": url,
        "handle": record.handle,
        "client": "URL" if record.source_url else "Computer",
        "data": {"filename": record.filename, "type": record.mimetype, "size": record.size},
    }
    if action == events.STORE:
        return {
            **common,
            "container": record.container,
            "filename": record.filename,
            "key": record.key,
            "type": record.mimetype,
            "status": "Stored",
            "size": record.size,
        }
    if action == events.OVERWRITE:
        return {
            **common,
            "mimetype": record.mimetype,
            "isWriteable": not record.cloud,
            "filename": record.filename,
            "size": record.size,
        }
    return common


def sign(secret: str, timestamp: str, body: str) -> str:
    message = f"{timestamp}.{body}".encode()
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def verify(secret: str, body: str | bytes, timestamp: str, signature: str) -> bool:
    """For receivers (and our tests): constant-time check of ``FS-Signature``."""
    text = body.decode() if isinstance(body, bytes) else body
    return hmac.compare_digest(sign(secret, timestamp, text), signature.strip().lower())


def headers(secret: str, timestamp: str, body: str) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "User-Agent": "Stowage-Webhooks",
        "FS-Timestamp": timestamp,
        "FS-Signature": sign(secret, timestamp, body),
    }
