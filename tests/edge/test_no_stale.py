"""Never a stale answer through the cache: 1,000 write-then-read cycles across two nodes
(PostgreSQL registry, shared storage, nginx in front) with one cache, then with two."""

from __future__ import annotations

import re
import time

import aiohttp

from tests.edge.helpers import get, overwrite, remove, store
from tests.edge.tier import EdgeCluster

CYCLES = 1000
REMOVALS = ("delete", "remove", "skip_storage")


async def test_no_stale_answer_after_overwrite_delete_or_remove(
    edge_cluster: EdgeCluster,
) -> None:
    apis = [f"{node.api}/api" for node in edge_cluster.nodes]
    caches = [cache.url for cache in edge_cluster.caches]
    key, secret = edge_cluster.key, edge_cluster.secret
    stale: list[str] = []
    reads = 0
    async with aiohttp.ClientSession() as http:
        handle = await store(http, apis[0], key, b"v-start")
        expected: bytes | None = b"v-start"
        for cycle in range(CYCLES):
            api = apis[cycle % 2]  # writes alternate between the nodes
            if cycle % 10 == 9:
                await remove(http, api, handle, secret, REMOVALS[cycle // 10 % 3])
                expected = None
            else:
                expected = f"v{cycle}".encode()
                await overwrite(http, api, handle, secret, expected)
            for cache in caches:
                for _ in range(2):  # the second read is a hit: the next write must purge it
                    status, body, _ = await get(http, f"{cache}/{handle}")
                    reads += 1
                    if (expected is None and status != 404) or (
                        expected is not None and (status, body) != (200, expected)
                    ):
                        stale.append(f"cycle {cycle} via {cache}: {status} {body[:20]!r}")
            if expected is None:  # the handle is gone: go on with a new one
                handle = await store(http, apis[(cycle + 1) % 2], key, b"v-new")
    assert stale == [], stale[:10]
    assert reads == CYCLES * 2 * len(caches)
    time.sleep(0.2)
    fills = sum(
        len(re.findall(r" GET /\w+ (200|404) ", node.log.read_text()))
        for node in edge_cluster.nodes
    )
    assert fills <= reads // 2 + 10, "the cache served no hits: nothing was tested"
