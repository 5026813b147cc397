"""The image catalogue as an outside checker sees it: generated chains of one to four
tasks (tests/api/sweepgen.py) on generated sources of every shape, through the CDN's URL
forms (``/<tasks>/<H>``, ``/<APIKEY>/<tasks>/<H>``, a secure app's
``/<APIKEY>/security=p:..,s:../<tasks>/<H>``, ``/<APIKEY>/<tasks>/<URL>``) with varied
``Accept``. Every answer is a 200 or a JSON error with a code and a 4xx; an option out of
its range is a 400 before any job runs; a 200's Content-Type is what its bytes are and
the format asked, its size what the tasks' documentation says, an animation keeps its
frame count and delays, and no two results share an ETag (nor does ``If-None-Match``
with another result's tag answer 304)."""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import pyvips
from aiohttp import web
from aiohttp.test_utils import TestServer

from tests.api import sweepgen
from tests.api.harness import Harness
from tests.api.sweepgen import Chain, Source
from tests.api.test_transform import stored

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")

ACCEPTS = ["*/*", "image/webp,*/*", "image/avif,image/webp,*/*", "image/png", "image/*", ""]
#: Chains of these alone may answer the stored file as it is (docs: quality, compress).
AS_STORED = {"cache", "auto_image", "compress", "quality"}
MAGIC = [
    (0, b"\xff\xd8\xff", "image/jpeg"), (0, b"\x89PNG", "image/png"), (0, b"GIF8", "image/gif"),
    (8, b"WEBP", "image/webp"), (4, b"ftypavif", "image/avif"), (0, b"II*\0", "image/tiff"),
    (0, b"MM\0*", "image/tiff"), (0, b"{", "application/json"), (0, b"[", "application/json"),
]  # fmt: skip


def sniffed(body: bytes) -> str:
    for at, magic, mimetype in MAGIC:
        if body[at : at + len(magic)] == magic:
            return mimetype
    head = body[:300].lower()
    return "image/svg+xml" if b"<svg" in head else "text/html" if b"<html" in head else "?"


async def jobs(harness: Harness) -> float:
    lines = (await harness.metrics()).splitlines()
    return sum(float(n.rsplit(" ", 1)[1]) for n in lines if n.startswith("stowage_processing_jobs"))


@asynccontextmanager
async def origin(files: dict[str, Source]) -> AsyncIterator[TestServer]:
    async def answer(request: web.Request) -> web.Response:
        return web.Response(body=files[request.match_info["name"]].data)

    app = web.Application()
    app.router.add_get("/{name}", answer)
    server = TestServer(app)
    await server.start_server()
    try:
        yield server
    finally:
        await server.close()


def path_of(
    rng: random.Random, harness: Harness, chain: Chain, handles: dict[str, str], url: str
) -> str:
    form = rng.random()
    if form < 0.15:
        return f"/{harness.open_app.api_key}/{chain.text}/{url}"
    if form < 0.35:
        return f"/{harness.open_app.api_key}/{chain.text}/{handles['open']}"
    if form < 0.5:
        handle = handles["secure"]
        pair = harness.policy(harness.secure_app, call=["read", "convert"], handle=handle)
        security = f"security=p:{pair['policy']},s:{pair['signature']}"
        return f"/{harness.secure_app.api_key}/{security}/{chain.text}/{handle}"
    return f"/{chain.text}/{handles['open']}"


def names_of(chain: Chain) -> set[str]:
    return {name for name, _ in chain.tasks}


def image_checks(chain: Chain, source: Source, ctype: str, body: bytes) -> list[str]:
    many = {"n": -1} if ctype in ("image/gif", "image/webp") else {}
    image = pyvips.Image.new_from_buffer(body, "", **many)
    found = []
    names = [name for name, _ in chain.tasks]
    paged = any("page" in options for _, options in chain.tasks)
    height = image.get("page-height") if image.get_typeof("page-height") else image.height
    size = sweepgen.expected_size(chain, source)
    turned = ctype == "image/avif" and source.orientation >= 5  # irot applied on decode
    if size and not paged and not turned and size != (image.width, height):
        found.append(f"size {(image.width, height)}, documented {size}")
    if source.frames > 1 and many and not paged and not set(names) & sweepgen.ANSWERS:
        pages = image.get("n-pages") if image.get_typeof("n-pages") else 1
        delays = [d if d > 10 or ctype != "image/webp" else 100 for d in source.delays]
        # Only an animation's frames are kept; a multi-page TIFF gives its first page.
        frames = source.frames if source.mimetype in ("image/gif", "image/webp") else 1
        if pages != frames:
            found.append(f"{pages} frames of {frames}")
        elif source.delays and list(image.get("delay")) != delays:
            found.append(f"delays {list(image.get('delay'))}, source {source.delays}")
    return found


def answer_checks(chain: Chain, source: Source, body: bytes) -> list[str]:
    if chain.tasks[-1][0] not in ("imagesize", "metadata") or any(
        "page" in options for _, options in chain.tasks
    ):
        return []
    answer = json.loads(body)
    size = sweepgen.expected_size(Chain(chain.tasks[:-1], "", False), source)
    if size and "width" in answer and (answer["width"], answer["height"]) != size:
        return [f"answered {answer}, documented {size}"]
    return []


@pytest.mark.parametrize("seed", [5210, 5211])
async def test_generated_chains_through_the_cdn_hold_their_documented_answers(
    harness: Harness, seed: int
) -> None:
    rng = random.Random(seed)
    files = sweepgen.sources(rng)
    handles = {}
    for name, source in files.items():
        handles[name] = {
            "open": await stored(harness, source.data, name),
            "secure": await stored(harness, source.data, name, harness.secure_app),
        }
    wrong: list[str] = []
    tags: dict[str, str] = {}
    async with origin(files) as server:
        for _ in range(110):
            name = rng.choice(sorted(files))
            source, chain = files[name], sweepgen.chain(rng)
            if not chain.tasks or {n for n, _ in chain.tasks} <= AS_STORED:
                continue
            url = str(server.make_url(f"/{name}"))
            path = path_of(rng, harness, chain, handles[name], url)
            accept = rng.choice(ACCEPTS)
            headers = {"Accept": accept} if accept else {}
            before = await jobs(harness) if chain.out_of_range else 0.0
            resp = await harness.cdn.get(path, headers=headers)
            body = await resp.read()
            seen = f"{name} {path} Accept={accept!r}: "
            if resp.status != 200:
                error = json.loads(body)["error"]
                if resp.status >= 500 or not error["code"]:
                    wrong.append(seen + f"{resp.status} {body[:200]!r}")
                if chain.out_of_range and (resp.status != 400 or await jobs(harness) != before):
                    wrong.append(seen + f"out of range: {resp.status}, a job ran or {body[:100]!r}")
                continue
            if chain.out_of_range:
                wrong.append(seen + "an option out of its range was accepted")
            ctype = resp.headers["Content-Type"].split(";")[0]
            asked = sweepgen.expected_type(chain, source)
            if sniffed(body) != ctype or asked not in (None, ctype):
                wrong.append(seen + f"{ctype}, bytes {sniffed(body)}, asked {asked}")
                continue
            digest = hashlib.sha256(body).hexdigest()
            tag = resp.headers.get("ETag")
            if tag is None:  # a URL source's result is spooled, not kept: no tag
                if url not in path:
                    wrong.append(seen + "a stored file's result without an ETag")
                continue
            if tags.setdefault(tag, digest) != digest:
                wrong.append(seen + f"ETag {tag} names another result too")
            other = rng.choice(sorted(tags))
            if tags[other] != digest:
                again = await harness.cdn.get(path, headers={**headers, "If-None-Match": other})
                if again.status == 304:
                    wrong.append(seen + f"304 for another result's tag {other}")
            vary = resp.headers.get("Vary", "").lower()
            if (
                "auto_image" in names_of(chain)
                and ctype.startswith("image/")
                and "accept" not in vary
            ):
                wrong.append(seen + "auto_image answered without Vary: Accept")
            if ctype == "application/json":
                wrong += [seen + w for w in answer_checks(chain, source, body)]
            elif ctype.startswith("image/") and ctype != "image/svg+xml":
                wrong += [seen + w for w in image_checks(chain, source, ctype, body)]
    assert wrong == []
