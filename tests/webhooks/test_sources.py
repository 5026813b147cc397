"""Every way a file gets stored publishes one fp.upload: the upload protocol's complete
(once, however often it is repeated) and a store from a url."""

from __future__ import annotations

import asyncio
import os

from tests.api.test_uploads import MiB, complete, put_part, split, start
from tests.webhooks.receiver import Harness, Receiver, with_webhook


async def test_multipart_complete_publishes_one_upload(
    harness: Harness, receiver: Receiver
) -> None:
    await with_webhook(harness, harness.open_app, receiver.url)
    data = os.urandom(2 * MiB + 5)
    started = await start(harness, data)
    parts = [
        {"part_number": n, "etag": await put_part(harness, started, n, chunk)}
        for n, chunk in enumerate(split(data, MiB), 1)
    ]
    done = await complete(harness, started, parts)
    again = await complete(harness, started, parts)
    assert again["handle"] == done["handle"]
    (got,) = await receiver.wait_for(1)
    body = got.json()
    assert body["action"] == "fp.upload" and body["text"]["handle"] == done["handle"]
    assert body["text"]["size"] == len(data) and body["text"]["filename"] == "big.bin"
    await asyncio.sleep(1.0)
    assert len(receiver.got) == 1  # the repeated complete published nothing


async def test_store_from_a_url_publishes_an_upload_from_url(
    harness: Harness, receiver: Receiver
) -> None:
    app = await with_webhook(harness, harness.open_app, receiver.url)
    source = receiver.url.replace("/hook", "/file.txt")
    resp = await harness.api.post(
        "/api/store/S3", params={"key": app.api_key}, data={"url": source}
    )
    assert resp.status == 200, await resp.text()
    (got,) = await receiver.wait_for(1)
    text = got.json()["text"]
    assert text["client"] == "URL" and text["size"] == 7 and text["type"] == "text/plain"
