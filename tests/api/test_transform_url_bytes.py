"""A URL source reaches its origin byte for byte as it was sent, alone or in a list
(``animate/[...]``, ``zip/[...]``, ``pdfcreate/[...]``, the forms that take URLs; a
collage's ``files`` are handles): escapes such as ``%20``, ``%2F``, ``%25`` and
``%3F`` are the URL's, never decoded on the way (a list's were, once)."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from urllib.parse import quote

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from yarl import URL

from tests.api.harness import Harness
from tests.api.test_transform import picture

#: Pieces of an origin's path: escapes that change the path when decoded, text as is.
PIECES = ["a", "b7", "%20", "%2F", "%25", "%3F", "%23", "%2C", "é", "+", "%2B", "~", "-"]


@dataclass
class Origin:
    base: str = ""
    asked: list[str] = field(default_factory=list)  # each request's path, as received


@pytest.fixture
async def origin() -> AsyncIterator[Origin]:
    site, png = Origin(), picture(24, 18, ".png")

    async def answer(request: web.Request) -> web.Response:
        site.asked.append(request.raw_path)  # as on the request line, query included
        return web.Response(body=png, content_type="image/png")

    app = web.Application()
    app.router.add_get("/{tail:.*}", answer)
    server = TestServer(app)
    await server.start_server()
    site.base = str(server.make_url("")).rstrip("/")
    yield site
    await server.close()


def generated(rng: random.Random, n: int) -> list[str]:
    """Paths as sent (escapes kept, unicode as text) with an extension, some with a
    query string of their own."""
    paths = []
    for i in range(n):
        name = "".join(rng.choice(PIECES) for _ in range(rng.randint(2, 6)))
        query = rng.choice(["", f"?v={i}", "?q=%20x%26y", "?a=%2F&b=é"])
        paths.append(f"/d{i}/{name}.png{query}")
    return paths


#: Escapes that change a path when decoded, and those that change a query string (the
#: fetch normalises the others: ``%2C`` is ``,``, ``%2F`` in a query ``/``, the same
#: alone or listed).
IN_PATH = ("%20", "%2F", "%25", "%3F", "%23", "%2B")
IN_QUERY = ("%20", "%26", "%25", "%23", "%2B")


def escapes_kept(sent: str, received: str) -> bool:
    """``received`` holds each escape of ``sent`` that decoding would change."""
    (path, _, query), (got, _, got_query) = sent.partition("?"), received.partition("?")
    return all(path.count(e) == got.count(e) for e in IN_PATH) and all(
        query.count(e) == got_query.count(e) for e in IN_QUERY
    )


def on_the_wire(path: str) -> str:
    """The request line's path of ``path``: non-ASCII text in UTF-8 escapes, a blank and
    a quote escaped (``["u1", "u2"]`` is ``[%22u1%22,%20%22u2%22]``)."""
    return "".join(c if c.isascii() and c not in ' "' else quote(c) for c in path)


async def asked_for(harness: Harness, origin: Origin, path: str, count: int) -> list[str]:
    origin.asked.clear()  # sent as a browser sends it: UTF-8 escapes, %22 for a quote
    resp = await harness.cdn.get(URL(on_the_wire(path), encoded=True))
    assert resp.status == 200, (path, await resp.text())
    await resp.read()
    assert len(origin.asked) == count, (path, origin.asked)
    return list(origin.asked)


@pytest.mark.parametrize("quoted", [False, True])
async def test_a_url_reaches_its_origin_the_same_alone_and_in_a_list(
    harness: Harness, origin: Origin, quoted: bool
) -> None:
    """filestack-js writes a source as given, in double quotes when it holds ``/``, and
    a list as ``["u1","u2"]``; a list's URLs with a query string split the request line
    (``cdn.with_list_whole``). Unquoted items are as other clients write them."""
    key, rng = harness.open_app.api_key, random.Random(11 + quoted)
    for _ in range(5):
        paths = generated(rng, rng.randint(2, 3))
        urls = [origin.base + p for p in paths]
        wire = [on_the_wire(p) for p in paths]
        alone = []
        for url in urls:
            shown = f'"{url}"' if quoted else url
            alone += await asked_for(harness, origin, f"/{key}/resize=w:10/{shown}", 1)
        assert all(escapes_kept(w, a) for w, a in zip(wire, alone, strict=True)), alone
        listed = rng.choice([",", ", "]).join(f'"{u}"' if quoted else u for u in urls)
        for tasks in ("animate=delay:50", "zip", "pdfcreate"):
            found = await asked_for(harness, origin, f"/{key}/{tasks}/[{listed}]", len(urls))
            assert sorted(found) == sorted(alone), tasks


async def test_a_list_sent_percent_encoded_whole_is_decoded_once(
    harness: Harness, origin: Origin
) -> None:
    """A URL sent percent-encoded (``https%3A%2F%2Fh%2Fa%2520b.png``) is decoded once,
    alone or in a list: the origin is asked for ``/a%20b.png``."""
    key, rng = harness.open_app.api_key, random.Random(5)
    paths = generated(rng, 3)
    urls = [quote(origin.base + p, safe="") for p in paths]
    wire = [on_the_wire(p) for p in paths]
    alone = []
    for url in urls:
        alone += await asked_for(harness, origin, f"/{key}/resize=w:10/{url}", 1)
    assert all(escapes_kept(w, a) for w, a in zip(wire, alone, strict=True)), alone
    listed = quote(",".join(f'"{origin.base + p}"' for p in paths), safe="")
    found = await asked_for(harness, origin, f"/{key}/zip/%5B{listed}%5D", len(paths))
    assert sorted(found) == sorted(alone)
