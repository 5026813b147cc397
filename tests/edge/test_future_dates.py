"""If-Modified-Since with a date later than now is ignored at the origin as at the edge
(probe neg.md F5). RFC 7232 3.3 calls such a date invalid; Varnish ignored it on a hit
(200) while the origin compared it (304). Seed 5095: dates from the file's Last-Modified
to a year ahead, on a plain file and on a derivative, each at the origin and on a hit."""

from __future__ import annotations

import email.utils
import random
import time

import aiohttp
import pyvips

from tests.edge.helpers import get, store
from tests.edge.tier import Edge


async def test_a_date_later_than_now_is_ignored_at_the_origin_and_the_edge(
    edge: Edge, http: aiohttp.ClientSession
) -> None:
    rng = random.Random(5095)
    picture = pyvips.Image.black(24, 16).cast("uchar").write_to_buffer(".png")
    handle = await store(http, edge.api, edge.key, picture)
    seen = {200: 0, 304: 0}
    for path in (f"/{handle}", f"/resize=width:12/{handle}"):
        origin, cache = edge.node.cdn + path, edge.cache.url + path
        status, _, headers = await get(http, cache)  # stored at the edge
        assert status == 200
        modified = email.utils.parsedate_to_datetime(headers["Last-Modified"]).timestamp()
        time.sleep(4)  # some past dates after the Last-Modified
        for _ in range(24):
            now = time.time()
            since = rng.choice(
                [
                    rng.uniform(modified - 86400, modified - 1),  # before: 200
                    rng.uniform(
                        modified + 2, now - 1
                    ),  # since then (a derivative's first: 1 s early): 304
                    rng.uniform(now + 3, now + 3 * 86400),  # later than now: ignored
                    rng.uniform(now + 3, now + 366 * 86400),
                ]
            )
            expected = 304 if modified <= since <= now else 200
            header = {"If-Modified-Since": email.utils.formatdate(int(since), usegmt=True)}
            for url in (origin, cache):
                for method in ("GET", "HEAD"):
                    async with http.request(method, url, headers=header) as resp:
                        await resp.read()
                        assert resp.status == expected, (url, method, since - now, since - modified)
            seen[expected] += 1
    assert min(seen.values()) >= 8, seen
