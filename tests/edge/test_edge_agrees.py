"""Two answers the edge gave differently from the origin (probe neg.md F7), now alike.

An Accept over the origin's 8190-byte limit: the VCL rewrote it to its class, so an
auto_image URL got 200 through the edge where the origin answers 431. It now gets a class
of its own that no stored answer has, and the origin's 431 JSON comes back, on a URL
already cached for browsers too. (A hit of a URL that does not vary is answered from the cache
whatever its headers: docs/deployment.md.)

If-Range with a date: the origin ignores the Range (it takes a strong ETag only), a hit
cut a 206. The VCL now drops such a Range, so both send the whole file.

Seeds 5096-5097."""

from __future__ import annotations

import email.utils
import json
import random

import aiohttp
import pyvips

from tests.edge.helpers import get, store
from tests.edge.tier import Edge

ORIGIN_VALUE = 8190


async def test_an_oversized_accept_gets_the_origins_431_through_the_edge(
    edge: Edge, http: aiohttp.ClientSession
) -> None:
    rng = random.Random(5096)
    picture: bytes = pyvips.Image.black(20, 10).cast("uchar").write_to_buffer(".png")
    handle = await store(http, edge.api, edge.key, picture)
    lengths = [ORIGIN_VALUE - 1, ORIGIN_VALUE, ORIGIN_VALUE + 1, ORIGIN_VALUE + 2]
    lengths += [rng.randint(ORIGIN_VALUE + 3, 30_000) for _ in range(8)]
    lengths += [rng.randint(1000, ORIGIN_VALUE - 2) for _ in range(4)]
    statuses = set()
    for path in (f"/auto_image/{handle}", f"/AUTO_IM%41GE/resize=width:8/{handle}"):
        for accept in ("image/avif,image/webp,*/*", "image/png", "image/webp"):  # all cached
            assert (await get(http, edge.cache.url + path, headers={"Accept": accept}))[0] == 200
        for length in lengths:
            head = rng.choice(["image/webp,", "image/avif,", "*/*,", ""])
            accept = (head + "x" * length)[:length]
            answers = []
            for root in (edge.node.cdn, edge.cache.url):
                status, body, headers = await get(http, root + path, headers={"Accept": accept})
                if status != 200:
                    assert headers["Content-Type"].startswith("application/json")
                    answers.append((status, json.loads(body)["error"]["code"]))
                else:
                    answers.append((status, headers["Content-Type"]))
            assert answers[0] == answers[1], (path, length, answers)
            assert answers[0][0] == (431 if length > ORIGIN_VALUE else 200), (length, answers)
            statuses.add(answers[0][0])
    assert statuses == {200, 431}


async def test_if_range_with_a_date_answers_alike_on_a_hit(
    edge: Edge, http: aiohttp.ClientSession
) -> None:
    rng = random.Random(5097)
    body = bytes(rng.randrange(256) for _ in range(3000))
    handle = await store(http, edge.api, edge.key, body)
    origin, cache = f"{edge.node.cdn}/{handle}", f"{edge.cache.url}/{handle}"
    status, _, headers = await get(http, cache)  # stored at the edge
    assert status == 200
    modified = headers["Last-Modified"]
    stamp = email.utils.parsedate_to_datetime(modified).timestamp()
    whole = 0
    for _ in range(24):
        start = rng.randrange(2900)
        value = rng.choice(
            [
                modified,
                email.utils.formatdate(stamp + rng.randint(-86400, 86400), usegmt=True),
                modified.replace("GMT", "+0000"),
            ]
        )
        condition = {"Range": f"bytes={start}-{start + rng.randrange(99)}", "If-Range": value}
        answers = []
        for url in (origin, cache):
            status, got, headers = await get(http, url, headers=condition)
            answers.append((status, got, headers.get("Content-Range")))
        assert answers[0] == answers[1], (value, answers[0][0], answers[1][0])
        whole += answers[0][:2] == (200, body)
    assert whole == 24
    # An If-Range with the ETag still gets the range from the cache.
    condition = {"Range": "bytes=10-19", "If-Range": headers["ETag"]}
    assert (await get(http, cache, headers=condition))[:2] == (206, body[10:20])
