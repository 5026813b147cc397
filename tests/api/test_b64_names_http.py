"""Over HTTP: a base64-form task name or option key holding grammar characters is a
``400`` error body (``INVALID_PARAMETER``, ``details.parameter`` = ``b64``) on the CDN and
the process address, where ``{"width:100,height": 50}`` had answered a 75x50 image and a
name ``resize=width:100`` a 100x67 one (seed 5109)."""

from __future__ import annotations

import base64
import json
import random

from tests.api.harness import Harness
from tests.api.test_transform import picture, stored


def _b64(value: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


async def test_a_b64_name_or_key_holding_grammar_is_a_400(harness: Harness) -> None:
    rng = random.Random(5109)
    handle = await stored(harness, picture(240, 160))
    key = harness.open_app.api_key
    cases = [
        [{"name": "resize", "params": {"width:100,height": 50}}],
        [{"name": "resize=width:100", "params": True}],
        [{"name": "flip/rotate=deg:90"}],
    ]
    for _ in range(6):
        odd = rng.choice(':,=/[]" ') + rng.choice(["", "x"])
        cases.append([{"name": "blur", "params": {"amount" + odd: 2}}])
    for tasks in cases:
        source = base64.urlsafe_b64encode(handle.encode()).decode()
        path = f"/{key}/b64/{_b64(tasks)}/b64://{source}"
        for client, prefix in ((harness.cdn, ""), (harness.api, "/process")):
            resp = await client.get(prefix + path)
            body = await resp.json()
            assert resp.status == 400, (tasks, body)
            assert body["error"]["code"] == "INVALID_PARAMETER", body
            assert body["error"]["details"]["parameter"] == "b64", body
