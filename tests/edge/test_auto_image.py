"""auto_image through the shipped VCL and a real Varnish: the cache keeps one copy per
format class (AVIF and WebP, AVIF alone, WebP, other), whatever the browsers' Accept
strings, and a purge removes every one of them."""

from __future__ import annotations

import random

import aiohttp
import pytest
import pyvips
import yarl

from tests.edge.helpers import get, gradient_png, overwrite, store
from tests.edge.tier import Edge, origin_gets
from tests.processing.test_accepts import random_header

CLASSES = {
    "image/avif": [
        "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8",
        "image/avif,image/webp,*/*",
        "image/avif",  # its own class: an AVIF too costly to make is not WebP to it
    ],
    "image/webp": [
        "image/webp,image/png,image/svg+xml,image/*;q=0.8,*/*;q=0.5",
        "image/avif;q=0,image/webp",
        "image/webp,*/*",
    ],
    "image/png": ["image/png,image/*;q=0.8,*/*;q=0.5", "*/*", "text/html"],
}

EDGE_CASES = [
    "image/webp;level=1;q=0",
    "image/webp; q = 0",
    "image/webpx",
    "image/avif;q=-1,image/webp;q=0",
    "image/avif;q=0e0",
    "image/webp;sq=0",
    *CLASSES["image/avif"],
]


async def fetch_all(http: aiohttp.ClientSession, url: str) -> set[tuple[int, int]]:
    sizes: set[tuple[int, int]] = set()
    for mimetype, accepts in CLASSES.items():
        for accept in accepts:
            sent = yarl.URL(url, encoded=True)  # as written: yarl would decode %5F
            status, body, headers = await get(http, sent, headers={"Accept": accept})
            assert status == 200, body[:300]
            assert headers["Content-Type"] == mimetype, accept
            assert "Accept" in headers["Vary"]
            image = pyvips.Image.new_from_buffer(body, "")
            sizes.add((image.width, image.height))
    return sizes


async def test_one_copy_per_format_class_and_purges_remove_them_all(
    edge: Edge, http: aiohttp.ClientSession
) -> None:
    handle = await store(http, edge.api, edge.key, gradient_png(40, 30, 60))
    url = f"{edge.cache.url}/auto_image/{handle}"
    assert await fetch_all(http, url) == {(40, 30)}
    assert origin_gets([edge.node], handle) == 4  # nine requests, four classes
    assert await fetch_all(http, url) == {(40, 30)}
    assert origin_gets([edge.node], handle) == 4  # all hits now
    await overwrite(http, edge.api, handle, edge.secret, gradient_png(20, 10, 60))
    assert await fetch_all(http, url) == {(20, 10)}  # no class kept the old picture
    assert origin_gets([edge.node], handle) == 8


async def test_the_edge_class_is_the_origins_choice_for_any_accept(
    edge: Edge, http: aiohttp.ClientSession
) -> None:
    """Generated Accept headers (tests/processing/test_accepts.py's): the format the
    edge serves is the one the origin serves the same header. The edge once took
    ``image/webp;level=1;q=0``, ``image/webpx`` and ``image/avif;q=-1`` as takers."""
    handle = await store(http, edge.api, edge.key, gradient_png(12, 8, 60))
    served = {}
    rng = random.Random()
    for accept in [*EDGE_CASES, *(random_header(rng) for _ in range(40))]:
        answers = []
        for root in (edge.cache.url, f"http://127.0.0.1:{edge.node.cdn_port}"):
            status, body, headers = await get(
                http, f"{root}/auto_image/{handle}", headers={"Accept": accept}
            )
            assert status == 200, body[:300]
            answers.append(headers["Content-Type"])
        assert answers[0] == answers[1], accept
        served[accept] = answers[0]
    assert set(served.values()) == {"image/avif", "image/webp", "image/png"}


def solid(colour: int) -> bytes:
    data: bytes = (pyvips.Image.black(16, 16) + colour).cast("uchar").write_to_buffer(".png")
    return data


@pytest.mark.parametrize(
    "chain",
    [
        "watermark=file:{other},size:100",
        "collage=files:[{other}],width:80,height:40,margin:1",
        "watermark=file:{other}/auto_image",
        "fallback=handle:{other},cache:600/crop=dim:[1000,1000,10,10]/auto_image",
    ],
)
async def test_a_change_to_any_file_a_result_reads_purges_it(
    edge: Edge, http: aiohttp.ClientSession, chain: str
) -> None:
    """Only the main handle tagged a result: a new watermark or collage file, or a
    source fixed after its fallback stood in, was served stale for up to a day."""
    broken = chain.startswith("fallback")  # the crop starts outside it: the fallback answers
    main = await store(http, edge.api, edge.key, gradient_png(40, 30, 60))
    other = await store(http, edge.api, edge.key, solid(10))
    url = f"{edge.cache.url}/{chain.format(other=other)}/{main}"
    origin = url.replace(edge.cache.url, f"http://127.0.0.1:{edge.node.cdn_port}")
    first = (await get(http, url))[1]
    assert (await get(http, url))[1] == first  # kept
    changed = main if broken else other
    await overwrite(
        http, edge.api, changed, edge.secret, gradient_png(1100, 1100, 60) if broken else solid(200)
    )
    status, now, _ = await get(http, url)
    assert status == 200 and now != first
    assert now == (await get(http, origin))[1]


@pytest.mark.parametrize("spelling", ["auto%5Fimage", "auto%5fimage", "%61uto_image", "AUTO_IMAGE"])
async def test_a_percent_encoded_auto_image_keeps_one_copy_per_class(
    edge: Edge, http: aiohttp.ClientSession, spelling: str
) -> None:
    """The origin decodes the task's name; the VCL matched ``auto_image`` as written, so
    ``auto%5Fimage`` kept a copy per Accept string (56 objects for 60 headers)."""
    handle = await store(http, edge.api, edge.key, gradient_png(24, 16, 60))
    url = f"{edge.cache.url}/{spelling}/{handle}"
    assert await fetch_all(http, url) == {(24, 16)}
    assert origin_gets([edge.node], handle) == 4  # nine requests, four classes
