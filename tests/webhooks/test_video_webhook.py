"""The webhook a finished video conversion sends (processing/videojobs.py): ``fp.converse``
with the conversion's address and its status answer, signed like every event; a failed
conversion sends its reason."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from filestack.helpers import verify_webhook_signature

from stowage.core.webhooks.payload import verify
from tests.api.harness import Harness
from tests.api.test_video import clip, finished, stored, url
from tests.webhooks.receiver import Receiver, with_webhook


async def converse_events(receiver: Receiver, count: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 30
    while True:
        found = [r for r in receiver.got if r.json()["action"] == "fp.converse"]
        if len(found) >= count:
            return [r.json() | {"_signed": _signed(r)} for r in found]
        assert time.monotonic() < deadline, "no fp.converse event arrived"
        await asyncio.sleep(0.1)


def _signed(received: Any) -> bool:
    """Checked by our verifier and by filestack-python's."""
    headers = {k.lower(): v for k, v in received.headers.items()}
    ours = verify("open-secret", received.body, headers["fs-timestamp"], headers["fs-signature"])
    sdk = verify_webhook_signature("open-secret", received.body.encode(), received.headers)
    return ours and sdk == (True, {})


async def test_a_finished_conversion_sends_fp_converse(
    harness: Harness, receiver: Receiver, tmp_path: Path
) -> None:
    await with_webhook(harness, harness.open_app, receiver.url)
    handle = await stored(harness, clip(tmp_path / "c.mp4"))
    path = url(harness, "video_convert=preset:h264,width:48", handle)
    done = await finished(harness, path)
    bad = await stored(harness, b"not a video", "bad.mp4")
    failed = await finished(harness, url(harness, "video_convert=preset:h264", bad))
    events = await converse_events(receiver, 2)
    by_status = {e["text"]["status"]: e for e in events}
    ok = by_status["completed"]
    assert ok["_signed"] and ok["text"]["uuid"] == done["uuid"]
    assert ok["text"]["url"] == f"/video_convert=preset:h264,width:48/{handle}"
    assert ok["text"]["data"] == done["data"] and ok["text"]["metadata"] == done["metadata"]
    assert ok["text"]["link"]["url"] == done["data"]["url"]
    assert ok["text"]["link"]["mime_type"] == "video/mp4"
    # The video's thumbnails, as the status answer gives them (docs/transformations.md).
    assert {"thumb", "thumb100x100", "thumb200x200"} <= set(ok["text"]["data"])
    gone = by_status["failed"]
    assert gone["text"]["uuid"] == failed["uuid"] and gone["text"]["message"] == failed["message"]
