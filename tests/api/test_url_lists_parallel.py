"""A list of URLs (``/<APIKEY>/zip/[u1,u2]``) is read several at once (generated lists,
seed 5190): ten URLs whose origin takes 0.3 s each were read one after the other, 3.5 s
in all. The answer is the one reading them in order gave: the files in the list's order
(repeats kept), or the error of the first URL in that order that fails, even when a later
one fails sooner; a request never runs more than half its app's fetch slots at once, and
no file read for a failed request is left behind."""

from __future__ import annotations

import asyncio
import io
import random
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.api.harness import Harness
from tests.api.sites import Origin

SLOTS = 8  # fetch_app_max_concurrent: a request runs half of them at once


def generated(rnd: random.Random, origin: Origin) -> tuple[list[str], list[int], list[int]]:
    """A list of 4 to 10 URLs (some listed twice), each answering after 0.2 to 0.4 s; in
    about half of the lists one or two of them fail (each its own status), the later one
    sooner."""
    count = rnd.randint(4, 10)
    waits = [rnd.randint(200, 400) for _ in range(count)]
    statuses = [200] * count
    if rnd.random() < 0.5:
        failing = sorted(rnd.sample(range(count), rnd.randint(1, 2)))
        for at, status in zip(failing, rnd.sample([404, 410, 500, 503], len(failing)), strict=True):
            statuses[at] = status
            waits[at] = 400 - 150 * failing.index(at)  # the later one fails first
    urls = [
        f"{origin.root}/wait/{w}/{s}/f{i}.txt"
        for i, (w, s) in enumerate(zip(waits, statuses, strict=True))
    ]
    if rnd.random() < 0.5:
        urls.insert(rnd.randint(0, count), rnd.choice(urls))
    return urls, waits, statuses


@pytest.mark.settings(fetch_app_max_concurrent=SLOTS, fetch_max_concurrent=16)
async def test_a_list_is_read_at_once_in_order_and_fails_as_read_in_order(
    harness: Harness, origin_site: Origin
) -> None:
    rnd = random.Random(5190)
    key = harness.open_app.api_key
    tmp, spool = harness.parts.processor.url_sources.folder, harness.parts.processor.spool.folder

    def left() -> list[Path]:
        return [*tmp.glob("read-*"), *_files(spool)]

    for _ in range(8):
        urls, waits, statuses = generated(rnd, origin_site)
        origin_site.most_running = 0
        started = time.monotonic()
        resp = await harness.cdn.get(f"/{key}/zip/[{','.join(urls)}]")
        body, took = await resp.read(), time.monotonic() - started
        assert origin_site.most_running <= SLOTS // 2, origin_site.most_running
        failed = [s for s in statuses if s != 200]
        if not failed:
            assert resp.status == 200, body[:300]
            with zipfile.ZipFile(io.BytesIO(body)) as archive:
                got = [archive.read(info) for info in archive.infolist()]
            assert got == [origin_site.body_of("/" + u.split("/", 3)[3]) for u in urls], urls
            # one after the other: the sum of the waits; at once: about a wave per 4 URLs
            assert took < 0.6 * sum(waits) / 1000 + 0.3, (took, waits)
            assert origin_site.most_running > 1
        else:
            assert resp.status == 502, body[:300]
            assert f"answered {failed[0]}," in body.decode(), (body, statuses)
        await _left_behind_none(left)


@pytest.mark.settings(processing_max_sources_bytes=200)
async def test_the_byte_limit_is_crossed_where_the_list_in_order_crosses_it(
    harness: Harness, origin_site: Origin
) -> None:
    """The first URLs answer last: the 413 still names the bytes of the list's first URLs
    up to the one that crosses the limit, as reading them in order did (seed 5196)."""
    rnd = random.Random(5196)
    key = harness.open_app.api_key
    folder = harness.parts.processor.url_sources.folder

    def read() -> list[Path]:
        return list(folder.glob("read-*"))

    for _ in range(6):
        count = rnd.randint(4, 8)
        urls = [
            f"{origin_site.root}/wait/{400 - 40 * i}/200/{'n' * rnd.randint(1, 40)}{i}"
            for i in range(count)
        ]
        sizes = [len(origin_site.body_of("/" + url.split("/", 3)[3])) for url in urls]
        totals = [sum(sizes[: i + 1]) for i in range(count)]
        resp = await harness.cdn.get(f"/{key}/zip/[{','.join(urls)}]")
        body = await resp.read()
        if totals[-1] <= 200:
            assert resp.status == 200, body[:300]
            continue
        crossed = next(total for total in totals if total > 200)
        assert resp.status == 413, body[:300]
        assert f"the sources hold {crossed} bytes" in body.decode(), (body, totals)
        await _left_behind_none(read)


def _files(folder: Path) -> list[Path]:
    return [path for path in folder.rglob("*") if path.is_file()]


async def _left_behind_none(found: Callable[[], list[Path]], seconds: float = 5.0) -> None:
    """None of the files ``found`` lists is left: at once when the server answered
    directly, or within ``seconds`` through nginx, which takes a streamed archive whole
    and hands it on before the node's request has ended and removed its files."""
    deadline = time.monotonic() + seconds
    while left := found():
        assert time.monotonic() < deadline, left
        await asyncio.sleep(0.05)
