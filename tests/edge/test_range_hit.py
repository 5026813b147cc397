"""A Range header answers the same from the cache as from the origin (issue 22): the shipped
VCL in front of a real node, each request first on a miss, then on a hit of the same file.

The origin honours one byte range and ignores the others (several ranges, a unit other than
``bytes``: RFC 9110 14.2, docs/decisions.md) by answering the whole file; Varnish's own
range code answered those with a 416 on a hit until the VCL normalised them."""

from __future__ import annotations

import aiohttp
import pytest

from tests.edge.helpers import get, store
from tests.edge.tier import Edge, origin_gets

BODY = b"0123456789abcdefghij"
IGNORED = [
    "bytes=0-1,4-5",
    "bytes=0-1, 4-5",
    "bytes=-3,0-1",
    "items=0-4",
    "pages=1-2",
    "none",
    "bytes",
]
HONOURED = ["bytes=2-5", "bytes=-4", "bytes=15-", "bytes=3-3", "bytes=10-99", "bytes=0-"]
#: Cut by the origin even when the file is cached: the cache cuts only plain ranges it can
#: satisfy, so that a 416 is the origin's (with its JSON error) on a hit as on a miss.
FORWARDED = ["BYTES=2-5", "bytes= 2-5", "bytes=25-30", "bytes=20-", "bytes=5-2", "bytes=-0"]


@pytest.mark.parametrize("value", IGNORED + HONOURED + FORWARDED)
async def test_a_range_answers_alike_on_a_miss_and_on_a_hit(
    edge: Edge, http: aiohttp.ClientSession, value: str
) -> None:
    handle = await store(http, edge.api, edge.key, BODY)
    url = f"{edge.cache.url}/{handle}"
    range_ = {"Range": value}
    miss_status, miss_body, miss_headers = await get(http, url, headers=range_)
    plain = await get(http, url)  # stores the file in the cache
    assert plain[:2] == (200, BODY)
    gets = origin_gets([edge.node], handle)
    hit_status, hit_body, hit_headers = await get(http, url, headers=range_)
    from_origin = origin_gets([edge.node], handle) - gets
    assert from_origin == (1 if value in FORWARDED else 0), "cut by the wrong server"
    assert (hit_status, hit_body) == (miss_status, miss_body), value
    assert hit_headers.get("Content-Range") == miss_headers.get("Content-Range"), value
    if value in IGNORED:
        assert (miss_status, miss_body) == (200, BODY)
    elif value in HONOURED:
        assert miss_status == 206
