"""A policy's ``url`` rule against other spellings of a URL (generated, seed 5194): the
rule is matched against the URL as sent and every reading of the URL the fetcher asks
for (docs/decisions.md); whatever the spelling (escapes of unreserved characters or of
dots and slashes, their case, ``;params``, a default port, a trailing dot in the host,
user info, an IDN host, a tab or line break), a URL the rule allows is one whose every
reading the origin may take stays under the allowed folder, or it is refused."""

from __future__ import annotations

import posixpath
import random
from urllib.parse import unquote

from tests.api.harness import Harness
from tests.api.sites import Origin

DOTS = [".", "%2e", "%2E"]
SLASHES = ["/", "%2f", "%2F", "%5c", "%5C", "%252f", "\\"]


def escaped(rnd: random.Random, text: str) -> str:
    """Some of ``text``'s letters as escapes, in either case."""
    out = []
    for char in text:
        if char.isalnum() and rnd.random() < 0.3:
            code = f"%{ord(char):02x}"
            out.append(code.upper() if rnd.random() < 0.5 else code)
        else:
            out.append(char)
    return "".join(out)


def spelling(rnd: random.Random, host: str, port: int) -> str:
    """A URL that names /allowed/... or, through dot segments, /other/..."""
    dot = "".join(rnd.choice(DOTS) for _ in range(2))
    slash = rnd.choice(SLASHES)
    params = rnd.choice(["", ";", ";v=1"])
    path = rnd.choice(
        [
            f"/allowed/{escaped(rnd, 'pic')}.png",
            f"/allowed/{dot}{params}{slash}other/pic.png",
            f"/allowed{slash}{dot}{slash}other/pic.png",
            f"/{escaped(rnd, 'allowed')}/pic.png",
            f"/allowed/x/{dot}{slash}{dot}{slash}other/pic.png",
            f"/allowed/\t{dot}/other/pic.png",
        ]
    )
    authority = rnd.choice(
        [
            f"{host}:{port}",
            f"{host}.:{port}",
            f"user@{host}:{port}",
            f"{host.upper()}:{port}",
            f"xn--bcher-kva.example:{port}",
            f"bücher.example:{port}",
            f"{host}:{port}@{host}:{port}",
        ]
    )
    return f"http://{authority}{path}"


def readings(raw: str) -> set[str]:
    """Every path an origin may take ``raw`` for: decoded again and again, ``\\`` as
    ``/``, dot segments resolved, ``;params`` dropped."""
    seen = {raw}
    path = raw
    while (decoded := unquote(path).replace("\\", "/")) != path:
        seen.add(decoded)
        path = decoded
    seen |= {"/".join(part.split(";")[0] for part in p.split("/")) for p in seen}
    return {posixpath.normpath(p) + "/" * p.endswith("/") for p in seen}


async def test_no_spelling_gets_past_a_url_rule(harness: Harness, origin_site: Origin) -> None:
    rnd = random.Random(5194)
    app = harness.secure_app
    port = int(origin_site.root.rsplit(":", 1)[1])
    rule = f"http://127\\.0\\.0\\.1:{port}/allowed/.*"
    policy = harness.policy(app, call=["convert", "store"], url=rule)
    allowed = refused = 0
    for _ in range(80):
        url = spelling(rnd, "127.0.0.1", port)
        origin_site.asked.clear()
        for path in (f"/{app.api_key}/resize=w:20/{url}", f"/{app.api_key}/store/{url}"):
            resp = await harness.cdn.get(path, params=policy, allow_redirects=False)
            await resp.read()
            assert resp.status < 500, (url, resp.status)
        if resp.status == 307:  # store: on the API
            location = resp.headers["Location"].split("/process", 1)[1]
            resp = await harness.api.get("/process" + location)
            assert resp.status < 500, url
        for raw, _ in origin_site.asked:
            assert all(p.startswith("/allowed/") for p in readings(raw)), (url, raw)
        allowed += bool(origin_site.asked)
        refused += not origin_site.asked
    # allowed: the plain spelling and escapes of letters; refused: the rest (another
    # host's spelling, user info, a path that leaves /allowed/ in some reading)
    assert allowed >= 5 and refused > 40, (allowed, refused)
