"""A download of a URL as it is (``/<APIKEY>/<URL>``) is named as a store of the same
URL is (``core/dispositions.py``): the first usable of the origin's ``filename*``,
``filename``, the last part of the URL the bytes came from, else ``file``. It was named
by the URL's last part alone, whatever the origin's ``Content-Disposition`` said (53 of
60 generated answers, seed 5300, named otherwise than their store). A transformation's
result of the URL, and its store, take that name's stem with the result's extension
(they took the URL's last part's). Generated origin headers (seed 5300): UTF-8
and ISO-8859-1 names, broken escapes, quotes, path parts, control characters, very long
names; the answer's header stays safe (an ASCII ``filename``, the whole name in
``filename*``, no line break)."""

from __future__ import annotations

import random
import re
from collections.abc import AsyncIterator
from urllib.parse import quote, unquote

import pytest
from aiohttp import web

from stowage.core.names import clean_filename
from tests.api.harness import Harness
from tests.api.sites import RawOrigin, served
from tests.api.test_transform import picture
from tests.api.test_url_fetch_names import generated

LATIN1 = "abcéüßñÀÿ -"


def _shown(disposition: str) -> str:
    """The whole name a ``Content-Disposition`` gives (its ``filename*``), checked safe."""
    assert "\r" not in disposition and "\n" not in disposition, disposition
    plain = re.search(r'filename="([^"]*)"', disposition)
    assert plain and plain[1].isascii() and plain[1].isprintable(), disposition
    found = re.search(r"filename\*=UTF-8''([^;]*)", disposition)
    assert found and found[1].isascii(), disposition
    return unquote(found[1])


def _answer(rnd: random.Random) -> tuple[bytes, str, str]:
    """The origin's ``Content-Disposition`` line as bytes (none: b""), the URL's path,
    and the name expected ("LONG": bounded, ending in ``.png``)."""
    kind = rnd.randrange(4)
    path = "/dir/" + quote(rnd.choice(["", "u.png", "ü.png"]))
    if kind == 0:  # ISO-8859-1 bytes, as older servers send them
        name = "".join(rnd.choice(LATIN1) for _ in range(rnd.randint(1, 10))) + "x.png"
        line = b'attachment; filename="' + name.encode("latin-1") + b'"'
        return line, path, name.strip()
    if kind == 1:  # quotes inside, as quoted pairs
        name = rnd.choice(['say "hi"', 'a"b', '"q"x']) + ".png"
        return ('inline; filename="' + name.replace('"', '\\"') + '"').encode(), path, name
    case = generated(rnd)  # filename*, filename and the URL's part, each usable or not
    line = case.header.encode() if case.header is not None else b""
    return line, case.path, case.expected or "file"


async def test_a_download_as_is_is_named_as_its_store(
    harness: Harness, raw_origin: RawOrigin
) -> None:
    rnd = random.Random(5300)
    key = harness.open_app.api_key
    for _ in range(60):
        line, path, expected = _answer(rnd)
        raw_origin.head = b"Content-Type: image/png\r\n"
        if line:
            raw_origin.head += b"Content-Disposition: " + line + b"\r\n"
        url = raw_origin.root + path
        resp = await harness.cdn.get(f"/{key}/{url}")
        assert resp.status == 200, await resp.text()
        shown = _shown(resp.headers["Content-Disposition"])
        form = {"url": url}
        stored = await harness.api.post("/api/store/S3", params={"key": key}, data=form)
        assert stored.status == 200, await stored.text()
        assert shown == (await stored.json())["filename"], (line, url)
        if expected == "LONG":
            assert shown.startswith("long-long-") and shown.endswith(".png"), line
            assert len(shown.encode()) <= 200
        else:
            assert shown == expected, (line, url)
        stem = shown.rsplit(".", 1)[0] if "." in shown else shown
        made = await harness.cdn.get(f"/{key}/output=format:webp/{url}")
        assert made.status == 200, await made.text()
        assert _shown(made.headers["Content-Disposition"]) == f"{stem}.webp", (line, url)
        kept = await harness.api.get(f"/process/{key}/output=format:webp/store/{url}")
        assert kept.status == 200, await kept.text()
        stored_name = clean_filename(f"{stem}.webp")  # 200 bytes, as every stored name
        assert (await kept.json())["filename"] == stored_name, (line, url)


@pytest.fixture
async def revalidated() -> AsyncIterator[tuple[str, list[str]]]:
    """An origin that names its file once, then answers 304 with no name to a fetch that
    sends its ETag back; ``asked``: each request's ``If-None-Match``."""
    asked: list[str] = []

    async def answer(request: web.Request) -> web.Response:
        asked.append(request.headers.get("If-None-Match", ""))
        if request.headers.get("If-None-Match") == '"v1"':
            return web.Response(status=304, headers={"ETag": '"v1"'})
        named = {"Content-Disposition": "attachment; filename*=UTF-8''r%C3%A9sum%C3%A9.png"}
        return web.Response(
            body=picture(8, 8, ".png"),
            headers={"Content-Type": "image/png", "ETag": '"v1"', **named},
        )

    async with served(answer, "/{tail:.*}") as root:
        yield f"{root}/files/x.png", asked


async def test_a_kept_copy_keeps_its_name(
    harness: Harness, revalidated: tuple[str, list[str]]
) -> None:
    """The kept copy is used on a 304, and so is the name its first answer gave."""
    url, asked = revalidated
    key = harness.open_app.api_key
    for _ in range(2):
        resp = await harness.cdn.get(f"/{key}/{url}")
        assert resp.status == 200, await resp.text()
        assert _shown(resp.headers["Content-Disposition"]) == "résumé.png"
    assert asked == ["", '"v1"']
