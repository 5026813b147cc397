"""If-None-Match lists answer the same through the cache as at the origin (probe edge.md
F5): `"a", <etag>` and `*` are 304 (RFC 9110 13.1.2, weak comparison), a list without the
ETag is 200. Varnish's own conditional compared the whole header with the ETag and
answered 200 to a list; the shipped VCL now hands it the ETag when the list holds it.

Seeded lists: random tags, the right one at a random place or missing, weak and strong
forms, spaces and tabs, empty elements, near misses (a tag one character off, a prefix, an
extension, unquoted, `w/`), sent to the origin and to Varnish, on a miss and on hits."""

from __future__ import annotations

import random
import string

import aiohttp
from multidict import CIMultiDict

from stowage.core.conditions import matches
from tests.edge.helpers import get, store
from tests.edge.tier import Edge

ETAGC = string.ascii_letters + string.digits + "!#$%&'()*+-./:;<=>?@[]^_`{|}~"
FILES = 6
LISTS_PER_FILE = 40


def _ows(rng: random.Random) -> str:
    return rng.choice(["", "", " ", "  ", "\t", " \t"])


def _tag(rng: random.Random, opaque: str | None = None) -> str:
    if opaque is None:
        opaque = "".join(rng.choice(ETAGC) for _ in range(rng.randint(0, 34)))
    return ("W/" if rng.random() < 0.3 else "") + f'"{opaque}"'


def _near_miss(rng: random.Random, etag: str) -> str:
    """A tag that is not ``etag`` but close to it."""
    i = rng.randrange(len(etag))
    other = rng.choice([c for c in string.hexdigits.lower() if c != etag[i]])
    return rng.choice(
        [
            f'"{etag[:i]}{other}{etag[i + 1 :]}"',
            f'"{etag[:-1]}"',
            f'"{etag}0"',
            f'"x{etag}"',
            f'w/"{etag}"',
            etag,
            f'"{etag}',
            f'"{etag.upper()}"',
        ]
    )


def _list(rng: random.Random, etag: str) -> str:
    kind = rng.random()
    if kind < 0.05:
        return _ows(rng) + "*" + _ows(rng)
    items = [_tag(rng) for _ in range(rng.randint(0, 6))]
    if kind < 0.55:
        items.insert(rng.randint(0, len(items)), _tag(rng, etag))
    elif kind < 0.85:
        items.insert(rng.randint(0, len(items)), _near_miss(rng, etag))
    if rng.random() < 0.15:
        items.insert(rng.randint(0, len(items)), "")  # an empty list element
    if rng.random() < 0.05:
        items.append(rng.choice(["junk", '"a" "b"', '"a,b"']))
    if not items:
        items = [_tag(rng)]
    return ",".join(_ows(rng) + item + _ows(rng) for item in items)


def _view(status: int, headers: CIMultiDict[str]) -> tuple[int, str | None, str | None, str | None]:
    return status, headers.get("ETag"), headers.get("Cache-Control"), headers.get("Vary")


async def test_if_none_match_lists_answer_as_at_the_origin(
    edge: Edge, http: aiohttp.ClientSession
) -> None:
    rng = random.Random(5)
    seen = {200: 0, 304: 0}
    for n in range(FILES):
        handle = await store(http, edge.api, edge.key, f"conditional {n}".encode())
        at_origin, at_cache = f"{edge.node.cdn}/{handle}", f"{edge.cache.url}/{handle}"
        status, _, headers = await get(http, at_origin)
        assert status == 200
        etag = headers["ETag"].removeprefix("W/").strip('"')
        for i in range(LISTS_PER_FILE):  # the first is the cache's miss, the others hits
            header = _list(rng, etag)
            condition = {"If-None-Match": header}
            expected = 304 if matches(header, etag) else 200
            o_status, _, o_headers = await get(http, at_origin, headers=condition)
            c_status, _, c_headers = await get(http, at_cache, headers=condition)
            origin, cache = _view(o_status, o_headers), _view(c_status, c_headers)
            assert origin[0] == expected, (header, origin)
            where = "miss" if i == 0 else "hit"
            assert cache[1] is not None and cache == origin, (header, where, cache, origin)
            seen[expected] += 1
    assert min(seen.values()) > FILES * LISTS_PER_FILE // 4, seen  # both answers well tried


async def test_if_none_match_on_several_lines_is_one_list(
    edge: Edge, http: aiohttp.ClientSession
) -> None:
    """A list sent on several field lines (RFC 9110 5.3): the VCL and the origin read the
    first line only, so a file's tag on a second line got 200. Seed 5164: lists of
    ``_list`` cut at random commas, the same answer at the origin and the cache as the
    list on one line gets."""
    rng = random.Random(5164)
    handle = await store(http, edge.api, edge.key, b"conditional on lines")
    at_origin, at_cache = f"{edge.node.cdn}/{handle}", f"{edge.cache.url}/{handle}"
    _, _, headers = await get(http, at_origin)
    etag = headers["ETag"].removeprefix("W/").strip('"')
    seen = {200: 0, 304: 0}
    for _ in range(60):
        items = [i for i in _list(rng, etag).split(",") if i.strip()]
        if len(items) < 2 or any('"' not in i and i.strip() != "*" for i in items):
            continue
        cut = rng.randint(1, len(items) - 1)
        lines = [",".join(items[:cut]), ",".join(items[cut:])]
        expected = 304 if matches(",".join(items), etag) else 200
        sent = CIMultiDict(("If-None-Match", line) for line in lines)
        for url in (at_origin, at_cache):
            got, _, _ = await get(http, url, headers=sent)
            assert got == expected, (url, lines)
        seen[expected] += 1
    assert min(seen.values()) >= 5, seen
