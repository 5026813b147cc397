"""Over HTTP: ``auto_image`` with a task that answers no image (``imagesize/auto_image``,
``metadata``, ``ascii``, ``detect_faces=export:true``) is one answer for every
``Accept``: it was 200 for ``*/*`` and 400 "must be the last task" for a browser taking
WebP or AVIF. Generated chains (seed 5106) x Accept headers, on the CDN and the process
address: the same status and body, and no ``Vary: Accept``."""

from __future__ import annotations

import random

from tests.api.harness import Harness
from tests.api.test_transform import picture, stored

ACCEPTS = (None, "*/*", "image/webp", "image/avif,image/webp", "image/avif", "image/png")
ANSWERS = (
    "imagesize",
    "metadata=params:[width,height]",
    "ascii=size:10",
    "detect_faces=export:true",
)
PICTURE = ("flip", "resize=width:40", "rotate=deg:90", "quality=value:60")


async def test_auto_image_with_an_answer_task_is_one_answer_for_every_accept(
    harness: Harness,
) -> None:
    rng = random.Random(5106)
    handle = await stored(harness, picture(80, 60, ".jpg"))
    chains = [[a, "auto_image"] for a in ANSWERS] + [["auto_image", a] for a in ANSWERS]
    for _ in range(8):
        tasks = [*rng.sample(PICTURE, rng.randint(0, 2)), rng.choice(ANSWERS)]
        tasks.insert(rng.randint(0, len(tasks)), "auto_image")
        chains.append(tasks)
    for tasks in chains:
        prefix = rng.choice(["", "/process"])
        client = harness.api if prefix else harness.cdn
        path = f"{prefix}/{'/'.join(tasks)}/{handle}"
        seen = set()
        for accept in ACCEPTS:
            headers = {"Accept": accept} if accept else {"Accept": ""}
            resp = await client.get(path, headers=headers)
            body = await resp.read()
            assert resp.status == 200, (path, accept, body[:300])
            assert "accept" not in resp.headers.get("Vary", "").lower(), (path, accept)
            seen.add((resp.status, resp.headers.get("Content-Type"), body))
        assert len(seen) == 1, path
