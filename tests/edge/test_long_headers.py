"""Long but valid Accept and If-None-Match headers get the origin's answer through the
shipped VCL (probe neg.md F1). Their expressions had a repeated group (one item's
parameters, the list's tags): about 340 repetitions ran out of PCRE2 JIT stack, and
Varnish failed the request, ``503`` with an empty error code. The expressions now have no
repeated group; a VCL failure (forced here with ``pcre2_match_limit=1``) still answers
the error shape, ``503 EDGE_ERROR``.

Generated headers (seeds 5091-5092) up to the origin's 8190-byte limit: the probe's
shapes around and far past its thresholds, and random parameter and tag mixes."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

import aiohttp
import pytest

from stowage.core.conditions import matches
from stowage.processing import accepts
from tests.edge.helpers import get, gradient_png, store
from tests.edge.tier import Edge
from tests.servers.varnish import Varnish

ORIGIN_VALUE = 8190  # the origin's (aiohttp's) limit for one header's value
FORMATS = {"avif": "image/avif", "webp": "image/webp", None: "image/png"}
#: (item, parameter): the probe's failing shapes (at 341, 315, 256, 164 and 682 of them).
SHAPES = [("image/avif", ";x"), ("image/webp", ";a"), ("image/webp", ";q=1"),
          ("image/avif", ";q=0.5 "), ("image/webp", ";q=1;a"), ("image/avif", ";"),
          ("image/webp", "; "), ("image/avif", "\t;"), ("image/webp", ";level=1")]  # fmt: skip
PARAMS = ["q=0", "q=1", "q=0.5", " q = 0 ", "level=1", "sq=0", "qs=0", "q", "", "x", "q=-1",
          "Q=0.001", "a=b"]  # fmt: skip


def long_accepts(rng: random.Random) -> list[str]:
    headers = []
    for kind, param in SHAPES:
        most = (ORIGIN_VALUE - len(kind) - 20) // len(param)
        for count in (341, 682, rng.randint(200, most), most):
            headers.append(kind + param * min(count, most))
    for _ in range(24):
        params = []
        while sum(map(len, params)) < rng.randint(700, ORIGIN_VALUE - 200):
            params.append(";" + rng.choice(PARAMS))
        item = rng.choice(["image/avif", "image/webp", "IMAGE/WEBP", "image/png"])
        before = rng.choice(["", "text/html,", "image/avif;q=0,", "*/*;q=0.8, "])
        header = before + item + "".join(params)[: ORIGIN_VALUE - len(before) - len(item) - 30]
        headers.append(header + rng.choice(["", ",*/*", ",image/webp"]))
    return headers


async def test_long_accept_headers_get_the_origins_format(
    edge: Edge, http: aiohttp.ClientSession
) -> None:
    rng = random.Random(5091)
    handle = await store(http, edge.api, edge.key, gradient_png(20, 14, 90))
    seen = set()
    for accept in long_accepts(rng):
        expected = FORMATS[accepts.accepted_format(accept)]
        for root in (edge.node.cdn, edge.cache.url):
            status, body, headers = await get(
                http, f"{root}/auto_image/{handle}", headers={"Accept": accept}
            )
            assert status == 200, (root, len(accept), accept[:40], body[:200])
            assert headers["Content-Type"] == expected, (root, accept[:60])
        seen.add(expected)
    assert seen == set(FORMATS.values())


def tag_list(rng: random.Random, etag: str, present: bool) -> str:
    size = rng.choice([341, 600, rng.randint(300, 1200)])
    shape = rng.choice(["short", "weak", "mixed"])
    tags = []
    for n in range(size):
        if shape == "short":
            tags.append(f'"{n}"')
        elif shape == "weak":
            tags.append(f'W/"{n:032d}"')
        else:
            tags.append(rng.choice(['""', f'"{n}"', f'W/"{n}"', ""]))
    if present:
        tags.insert(rng.randrange(len(tags) + 1), rng.choice(["", "W/"]) + f'"{etag}"')
    header = rng.choice([",", ", ", " ,\t"]).join(tags)
    while len(header) > ORIGIN_VALUE - 100:  # within the origin's limit, the tag kept
        cut = header.rfind(",", 0, len(header) // 2)
        header = header[cut + 1 :] if f'"{etag}"' in header[cut + 1 :] else header[:cut]
    return header


async def test_long_if_none_match_lists_answer_as_at_the_origin(
    edge: Edge, http: aiohttp.ClientSession
) -> None:
    rng = random.Random(5092)
    seen = {200: 0, 304: 0}
    for n in range(4):
        handle = await store(http, edge.api, edge.key, f"long lists {n}".encode())
        origin, cache = f"{edge.node.cdn}/{handle}", f"{edge.cache.url}/{handle}"
        status, _, headers = await get(http, origin)
        assert status == 200
        await get(http, cache)  # stored: the lists below are hits
        etag = headers["ETag"].removeprefix("W/").strip('"')
        for i in range(8):
            header = tag_list(rng, etag, present=i % 2 == 0)
            expected = 304 if matches(header, etag) else 200
            for method in ("GET", "HEAD"):
                for url in (origin, cache):
                    async with http.request(method, url, headers={"If-None-Match": header}) as resp:
                        body = await resp.read()
                        assert resp.status == expected, (method, url, len(header), body[:200])
                seen[expected] += 1
    assert min(seen.values()) >= 16, seen


@pytest.fixture(scope="module")
def failing_cache(edge: Edge) -> Iterator[Varnish]:
    """The shipped VCL on a varnishd whose every expression fails (PCRE2 match limit 1)."""
    cache = Varnish(backend_port=edge.node.cdn_port, options=["-p", "pcre2_match_limit=1"])
    try:
        cache.start()
        yield cache
    finally:
        cache.stop()


@pytest.mark.parametrize("sent_code", [None, "", 'X", "evil": "1', "PURGE_FORBIDDEN"])
async def test_a_vcl_failure_answers_the_error_shape(
    failing_cache: Varnish, http: aiohttp.ClientSession, sent_code: str | None
) -> None:
    """Varnish's 503 for a failed VCL read the code from a header the client may send."""
    headers = {"Accept": "image/webp"}
    if sent_code is not None:
        headers["X-Stowage-Code"] = sent_code
    for method in ("GET", "HEAD"):
        async with http.request(
            method, f"{failing_cache.url}/auto_image/NoSuchHandle", headers=headers
        ) as resp:
            body = await resp.read()
            assert resp.status == 503, body[:200]
            assert resp.headers["Content-Type"] == "application/json"
            if method == "GET":
                assert json.loads(body)["error"]["code"] == "EDGE_ERROR"
