"""Every URL whose answer varies with Accept keeps at most four copies at the edge (probe
neg.md F2). The VCL grouped Accept on URLs it could read ``auto_image`` in, so two forms
the origin negotiates kept one copy per browser string: a task name with percent-encoded
letters the VCL's alternatives missed (``%41uto_image``: 30 objects for 30 browsers) and
filestack-js's base64 form, whose tasks the VCL cannot read. The VCL now classes every
request's Accept (X-Stowage-Accept) and stores a varying answer per class; Accept reaches
the origin as sent (a plain file stays one copy whatever the browser).

Seeds 5093-5094: random percent-encodings and letter cases of ``auto_image``, and the base64
form as filestack-js builds it (URL-safe and standard with ``%2F``/``%2B``/``%3D``), with
and without a task before auto_image; 30 browser Accept strings each."""

from __future__ import annotations

import base64
import itertools
import json
import random
import re
import time
from urllib.parse import quote

import aiohttp
import pyvips
import yarl
from multidict import CIMultiDict

from stowage.processing import accepts
from tests.edge.helpers import get, gradient_png, store
from tests.edge.tier import Edge, origin_gets

BROWSERS = [
    "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8",
    "image/avif,image/webp,*/*",
    "image/webp,*/*",
    "image/webp,image/avif,image/jxl,image/heic,image/heic-sequence,video/*;q=0.8,image/png,"
    "image/svg+xml,image/*;q=0.8,*/*;q=0.5",
    "image/png,image/svg+xml,image/*;q=0.8,video/*;q=0.8,*/*;q=0.5",
    "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,"
    "image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7",
    "text/html,application/xhtml+xml,application/xml;q=0.9,image/webp,*/*;q=0.8",
    "image/webp,image/apng,image/*,*/*;q=0.8",
    "*/*",
    "image/*",
    "",
    "image/jxl,image/avif,image/webp,*/*",
    "image/avif,image/webp,image/apng,image/*,*/*;q=0.8",
    "image/webp,image/*,*/*;q=0.8",
    "image/png,image/*;q=0.8,*/*;q=0.5",
    "image/gif, image/x-xbitmap, image/jpeg, image/pjpeg, */*",
    "image/avif;q=0.9,image/webp;q=0.8,*/*;q=0.1",
    "application/json, text/plain, */*",
    "image/x-webp,*/*",
    "image/webp;q=1.0,*/*;q=0.5",
    "image/avif,image/webp,image/jpeg,image/png,image/*;q=0.8,*/*;q=0.5",
    "image/heic,image/heif,image/avif,*/*",
    "image/apng,image/avif,image/webp,*/*;q=0.8",
    "image/webp,image/avif,video/*;q=0.8,*/*;q=0.5",
    "image/jpeg,image/png,*/*",
    "*/*;q=0.8,image/avif",
    "image/avif",
    "image/webp",
    "Image/AVIF, Image/WebP",
    "image/avif;q=0,image/webp,*/*",
]
FORMATS = {"avif": "image/avif", "webp": "image/webp", None: "image/png"}
ESCAPES = "%{:02X}", "%{:02x}"


def spelling(rng: random.Random) -> str:
    """``auto_image`` with some letters in upper case and some percent-encoded, one
    escape at least an upper-case letter's or in upper-case hex."""
    while True:
        out = []
        for char in "auto_image":
            char = char.upper() if rng.random() < 0.3 else char
            if rng.random() < 0.4:
                out.append(rng.choice(ESCAPES).format(ord(char)))
            else:
                out.append(char)
        word = "".join(out)
        if any(e in word for e in ("%4", "%5", "%6F", "%6D", "%7")) or "%41" in word:
            return word


def b64(text: str, safe: bool) -> str:
    if safe:
        return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")
    return quote(base64.b64encode(text.encode()).decode(), safe="")


def b64_form(key: str, handle: str, before: bool, safe: bool) -> str:
    tasks = [{"name": "auto_image", "params": {}}]
    if before:
        tasks.insert(0, {"name": "resize", "params": {"width": 10}})
    return f"/{key}/b64/{b64(json.dumps(tasks), safe)}/b64://{b64(handle, safe)}"


def origin_requests(edge: Edge) -> int:
    """Requests that reached the node's CDN origin so far (its access log; the log may show
    a base64 path expanded, so no path is matched)."""
    time.sleep(0.2)  # the access log line is written just after the response is sent
    text = edge.node.log.read_text(errors="replace")
    return len(re.findall(r" (GET|HEAD) /[^ ]* \d{3} ", text))


async def through_edge(http: aiohttp.ClientSession, url: str) -> None:
    for accept in BROWSERS:
        status, body, headers = await get(
            http, yarl.URL(url, encoded=True), headers={"Accept": accept}
        )
        assert status == 200, (url, accept, body[:200])
        expected = FORMATS[accepts.accepted_format(accept)]
        assert headers["Content-Type"] == expected, (url, accept)
        assert "Accept" in headers["Vary"]
        image = pyvips.Image.new_from_buffer(body, "")
        assert image.width in (10, 16), (url, image.width)


async def test_percent_encoded_names_keep_one_copy_per_class(
    edge: Edge, http: aiohttp.ClientSession
) -> None:
    rng = random.Random(5093)
    names = ["%41uto_image", "AUTO_IM%41GE", "auto_imag%45", *(spelling(rng) for _ in range(5))]
    for name in names:
        handle = await store(http, edge.api, edge.key, gradient_png(16, 12, 30))
        await through_edge(http, f"{edge.cache.url}/{name}/{handle}")
        assert origin_gets([edge.node], handle) <= 4, name  # 30 browsers, four classes


async def test_the_base64_form_keeps_one_copy_per_class(
    edge: Edge, http: aiohttp.ClientSession
) -> None:
    rng = random.Random(5094)
    for before in (False, True):
        for safe in (True, False):
            handle = await store(http, edge.api, edge.key, gradient_png(16, 12, 30))
            path = b64_form(edge.key, handle, before, safe)
            first = origin_requests(edge)
            await through_edge(http, edge.cache.url + path)
            assert 1 <= origin_requests(edge) - first <= 4, path  # 30 browsers, four classes
    # A URL that does not vary: one copy whatever the browser, and the same bytes.
    handle = await store(http, edge.api, edge.key, gradient_png(16, 12, 30))
    bodies = set()
    for accept in rng.sample(BROWSERS, 10):
        status, body, _ = await get(http, f"{edge.cache.url}/{handle}", headers={"Accept": accept})
        assert status == 200
        bodies.add(body)
    assert len(bodies) == 1
    assert origin_gets([edge.node], handle) == 1


def split_lines(text: str, rng: random.Random) -> list[str]:
    """A comma-separated list as 2-3 field lines, cut at random commas."""
    items = text.split(",")
    cuts = sorted(rng.sample(range(1, len(items)), min(len(items) - 1, rng.randint(1, 2))))
    bounds = [0, *cuts, len(items)]
    return [",".join(items[a:b]) for a, b in itertools.pairwise(bounds)]


async def test_accept_on_several_lines_is_classed_as_one_list(
    edge: Edge, http: aiohttp.ClientSession
) -> None:
    """The VCL read a header's first line only: an Accept whose second line named WebP was
    classed (and cached) as the first line alone. Seed 5163: browser strings cut at random
    commas; the edge answers each as the origin answers the whole list on one line."""
    rng = random.Random(5163)
    handle = await store(http, edge.api, edge.key, gradient_png(16, 12, 40))
    url = f"{edge.cache.url}/auto_image/{handle}"
    differs = 0
    for accept in [b for b in BROWSERS if b.count(",") >= 1] * 2:
        lines = split_lines(accept, rng)
        sent = CIMultiDict(("Accept", line) for line in lines)
        status, body, headers = await get(http, url, headers=sent)
        assert status == 200, (lines, body[:200])
        expected = FORMATS[accepts.accepted_format(accept)]
        assert headers["Content-Type"] == expected, lines
        differs += FORMATS[accepts.accepted_format(lines[0])] != expected
    assert differs >= 5  # the cases tell a first-line reading apart
