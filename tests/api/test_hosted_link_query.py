"""A hosted CDN link read as its handle (``processing/hostedlinks.py``) with a query of
its own: ``/resize=w:50/"https://cdn.filestackcontent.com/H?dl=true"`` answered 400
"dl must be one of true, 1, ..." (the query's closing quote read into the value), as
filestack-js builds it from ``new Filelink('https://cdn.filestackcontent.com/H?dl=true')``.
The link's query is read as the same query on the handle's own URL: generated queries
of the parameters the CDN takes, in every spelling of the link, with and without tasks."""

from __future__ import annotations

import random
from urllib.parse import quote

from yarl import URL

from tests.api.harness import Harness
from tests.api.test_transform import picture, stored

BOOLEAN_WORDS = ["true", "false", "1", "0", "yes", "no", "TRUE", "off"]
HEADERS = ("Content-Type", "Content-Disposition", "Cache-Control", "X-Content-Type-Options")


def _query(harness: Harness, rng: random.Random, secure: bool, handle: str) -> str:
    pairs: list[tuple[str, str]] = []
    for name in ("dl", "cache"):
        if rng.random() < 0.6:
            pairs.append((name, rng.choice(BOOLEAN_WORDS)))
    if secure:
        app = harness.secure_app
        pair = harness.policy(app, call=["read", "convert"], handle=handle)
        if rng.random() < 0.25:
            pair["signature"] = "0" * 64  # refused here as on the handle's URL
        pairs += [("policy", pair["policy"]), ("signature", pair["signature"])]
    if rng.random() < 0.3:
        pairs.append(("filename", "x.png"))  # a name the CDN does not read: ignored alike
    rng.shuffle(pairs)
    return "&".join(f"{name}={quote(value, safe='')}" for name, value in pairs)


def _spellings(link: str, query: str) -> list[str]:
    """The link as filestack-js quotes it (its query then the request's, with the
    closing quote), with ``%22`` quotes, percent-encoded whole, and as it is."""
    whole = f"{link}?{query}" if query else link
    return [
        f'"{link}' + (f'?{query}"' if query else '"'),
        f"%22{link}" + (f"?{query}%22" if query else "%22"),
        "%22" + quote(whole, safe="") + "%22",
        quote(whole, safe=""),
        link + (f"?{query}" if query else ""),
    ]


async def _answer(harness: Harness, path: str) -> tuple[int, dict[str, str | None], bytes]:
    resp = await harness.cdn.get(URL(path, encoded=True))
    body = await resp.read()
    return resp.status, {name: resp.headers.get(name) for name in HEADERS}, body


async def test_a_hosted_links_query_is_read_as_on_the_handles_url(harness: Harness) -> None:
    rng = random.Random(31)
    files = {}
    for secure in (False, True):
        app = harness.secure_app if secure else harness.open_app
        files[secure] = await stored(harness, picture(40, 30, ".png"), "h.png", app=app)
    for _ in range(24):
        secure = rng.random() < 0.4
        handle = files[secure]
        app = harness.secure_app if secure else harness.open_app
        query = _query(harness, rng, secure, handle)
        tasks = rng.choice(["", "flip/", "resize=width:20/"])
        key = rng.choice(["", f"{app.api_key}/"])
        expected = await _answer(harness, f"/{key}{tasks}{handle}" + (f"?{query}" if query else ""))
        assert expected[0] in (200, 403), expected
        for spelled in _spellings(f"https://cdn.filestackcontent.com/{handle}", query):
            found = await _answer(harness, f"/{key}{tasks}{spelled}")
            assert found[:2] == expected[:2], (spelled, found, expected[:2])
            assert found[2] == expected[2], spelled
