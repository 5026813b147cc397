"""A URL source whose path or query holds control characters, blanks, non-ASCII or
characters a URL may not hold raw (generated, seed 5193): the origin is asked for exactly
that URL percent-encoded (UTF-8, each byte ``%XX``), or the request is refused with 400 and
a JSON code; never a 5xx. A tab or line break was dropped (WHATWG's parser rule):
``/a<TAB>b.png`` was fetched as ``/ab.png``, another file than the one named. A store
keeps the URL as fetched as its ``source_url``: a NUL kept as sent made the store a 500
on a PostgreSQL registry."""

from __future__ import annotations

import random
from urllib.parse import quote

from aiohttp import ClientResponse

from tests.api.harness import Harness
from tests.api.sites import Origin

POOL = [chr(c) for c in range(32)] + list(' \x7fé漢😀\u00a0\u2028\ufeff"<>`{|}^') + ["a"] * 8
SAFE = "!$&'()*+,;=:@-._~"  # what a path keeps raw (RFC 3986 pchar)
REFUSED = {"INVALID_URL", "INVALID_REQUEST_PATH"}  # through nginx too (its NUL answer)


async def source_url(harness: Harness, stored: ClientResponse) -> str:
    handle = (await stored.json())["handle"]
    params = {"source_url": "true", "key": harness.open_app.api_key}
    meta = await harness.api.get(f"/api/file/{handle}/metadata", params=params)
    return str((await meta.json())["source_url"])


def part(rnd: random.Random) -> str:
    return "".join(rnd.choice(POOL) for _ in range(rnd.randint(1, 6)))


async def test_a_url_is_fetched_as_written_percent_encoded_or_refused(
    harness: Harness, origin_site: Origin
) -> None:
    rnd = random.Random(5193)
    key = harness.open_app.api_key
    fetched = refused = 0
    for _ in range(40):
        segment = part(rnd) + ".png"
        url = f"{origin_site.root}/dir/{segment}"
        expected = "/dir/" + quote(segment, safe=SAFE)
        for how in ("store", "process", "cdn"):
            origin_site.asked.clear()
            if how == "store":
                resp = await harness.api.post(
                    "/api/store/S3", params={"key": key}, data={"url": url}
                )
            elif how == "process":
                resp = await harness.api.get(f"/process/{key}/resize=w:20/{quote(url, safe='')}")
            else:
                resp = await harness.cdn.get(f"/{key}/resize=w:20/{origin_site.root}{expected}")
            body = await resp.read()
            assert resp.status < 500, (how, segment, body[:300])
            if resp.status == 200:
                assert [path for path, _ in origin_site.asked] == [expected], (how, segment)
                fetched += 1
                if how == "store":  # kept as fetched: PostgreSQL takes no NUL
                    assert await source_url(harness, resp) == origin_site.root + expected
            else:
                assert resp.status == 400, (how, segment, body[:300])
                assert (await resp.json())["error"]["code"] in REFUSED, body
                assert not origin_site.asked
                refused += 1
    assert fetched > 40 and refused > 10, (fetched, refused)
