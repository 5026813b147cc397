"""Signatures: the Filestack vector, our verify, and both official SDKs' own checks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from filestack.helpers import verify_webhook_signature

from stowage.core import events
from stowage.core.webhooks import event_body, sign, verify
from stowage.registry.base import FileRecord
from tests.webhooks.receiver import js_sdk_verifies

# From filestack-js's own validateWebhookSignature test.
VECTOR: dict[str, str] = json.loads((Path(__file__).parent / "vector.json").read_text())
RECORD = FileRecord(
    handle="xK88QArxRiyVvFzo4p33",
    api_key="app",
    provider="S3",
    location="local",
    container="default",
    key="abc_01 (1).png",
    filename="01 (1).png",
    mimetype="image/png",
    size=881855,
)


def test_the_filestack_vector_signs_and_verifies() -> None:
    secret, ts, body = VECTOR["secret"], VECTOR["timestamp"], VECTOR["body"]
    assert sign(secret, ts, body) == VECTOR["signature"]
    assert verify(secret, body, ts, VECTOR["signature"])
    assert verify(secret, body.encode(), ts, VECTOR["signature"].upper())
    assert not verify(secret, body + " ", ts, VECTOR["signature"])
    assert not verify(secret, body, str(int(ts) + 1), VECTOR["signature"])
    assert not verify("other", body, ts, VECTOR["signature"])


def test_the_python_sdk_accepts_the_vector_and_refuses_a_forgery() -> None:
    headers = {"FS-Timestamp": VECTOR["timestamp"], "FS-Signature": VECTOR["signature"]}
    assert verify_webhook_signature(VECTOR["secret"], VECTOR["body"].encode(), headers) == (
        True,
        {},
    )
    ok, _ = verify_webhook_signature("wrong", VECTOR["body"].encode(), headers)
    assert not ok


def test_the_js_sdk_accepts_our_signatures() -> None:
    body = event_body(7, events.STORE, RECORD, "http://127.0.0.1:8081/" + RECORD.handle, 1)
    ours = {"secret": "s3cret", "body": body, "timestamp": "1700000000"}
    ours["signature"] = sign("s3cret", "1700000000", body)
    forged = {**ours, "body": body.replace("881855", "1")}
    assert js_sdk_verifies([VECTOR, ours, forged]) == [True, True, False]


def test_bodies_have_filestacks_shape() -> None:
    url = "http://cdn.example/" + RECORD.handle
    upload: dict[str, Any] = json.loads(event_body(6844, events.STORE, RECORD, url, 1559199901))
    vector = json.loads(VECTOR["body"])
    assert set(vector) <= set(upload)
    assert set(vector["text"]) <= set(upload["text"])
    assert upload["text"]["data"] == {"filename": "01 (1).png", "type": "image/png", "size": 881855}
    assert upload["text"]["status"] == "Stored" and upload["text"]["key"] == RECORD.key
    assert (upload["id"], upload["action"], upload["timestamp"]) == (6844, "fp.upload", 1559199901)
    overwrite = json.loads(event_body(1, events.OVERWRITE, RECORD, url, 2))["text"]
    assert overwrite["mimetype"] == "image/png" and overwrite["isWriteable"] is True
    assert overwrite["url"] == url and overwrite["size"] == 881855
    delete = json.loads(event_body(1, events.DELETE, RECORD, url, 3))
    assert delete["action"] == "fp.delete" and delete["text"]["url"] == url
