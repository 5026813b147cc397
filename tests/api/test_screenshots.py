"""``urlscreenshot`` with the real headless Chromium (issue 26): a page drawn at the
asked size, chained with image tasks; and every request of the page through the URL
guard: an internal page, a redirect or a subresource pointing inside is refused, and a
listener on 127.0.0.1 sees no connection."""

from __future__ import annotations

import asyncio
import ipaddress
import random
import socket
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from stowage.core import urlguard
from tests.api.harness import Harness
from tests.api.test_transform import decoded, get
from tests.api.test_transform_rules import code_of

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.needs("chromium", by="scripts/setup.d/90-browser.sh"),
]
#: The test site's address, taken as public for the guard (monkeypatched below), while
#: 127.0.0.1, where the listener waits, stays internal.
SITE = "127.0.0.2"


def coloured(top: str, bottom: str = "#00f", extra: str = "") -> str:
    return (
        "<!doctype html><html><body style='margin:0'>"
        f"<div style='height:300px;background:{top}'></div>"
        f"<div style='height:1700px;background:{bottom}'></div>{extra}</body></html>"
    )


@pytest.fixture
async def listener() -> AsyncIterator[tuple[int, list[str]]]:
    seen: list[str] = []

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(str(writer.get_extra_info("peername")))
        writer.close()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1], seen
    finally:
        server.close()
        await server.wait_closed()


@pytest.fixture
async def site(listener: tuple[int, list[str]]) -> AsyncIterator[str]:
    """Pages on 127.0.0.2: a plain one, and ones pointing at the listener on 127.0.0.1."""
    inside = f"http://127.0.0.1:{listener[0]}"

    def page(html: str) -> Any:
        async def handler(request: web.Request) -> web.Response:
            return web.Response(text=html, content_type="text/html")

        return handler

    async def redirect(request: web.Request) -> web.Response:
        raise web.HTTPFound(request.query.get("to", inside + "/"))

    app = web.Application()
    app.router.add_get("/", page(coloured("#f00")))
    app.router.add_get("/img", page(coloured("#f00", extra=f"<img src='{inside}/x.png'>")))
    app.router.add_get(
        "/fetch", page(coloured("#f00", extra=f"<script>fetch('{inside}/x')</script>"))
    )
    app.router.add_get("/away", redirect)
    runner = web.AppRunner(app)
    await runner.setup()
    tcp = web.TCPSite(runner, SITE, 0)
    await tcp.start()
    port = tcp._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://{SITE}:{port}"
    await runner.cleanup()


@pytest.fixture
def site_is_public(monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard on, with 127.0.0.2 taken as a public address (the test site's), and the
    name ``inside.test`` resolving to 127.0.0.1 (a name that hides an internal address)."""
    public = urlguard.is_public
    monkeypatch.setattr(urlguard, "is_public", lambda ip: str(ip) == SITE or public(ip))
    resolve = aiohttp.ThreadedResolver.resolve

    async def resolving(self: Any, host: str, port: int = 0, family: Any = 0) -> Any:
        if host == "inside.test":
            return await resolve(self, "127.0.0.1", port, family)
        return await resolve(self, host, port, family)

    monkeypatch.setattr(aiohttp.ThreadedResolver, "resolve", resolving)
    assert not urlguard.is_public(ipaddress.ip_address("127.0.0.1"))


def colour_at(body: bytes, x: int, y: int) -> list[int]:
    return [round(v) for v in decoded(body).getpoint(x, y)[:3]]


async def test_a_page_is_drawn_at_the_window_size(harness: Harness, site: str) -> None:
    key = harness.open_app.api_key
    resp, body = await get(
        harness, f"/{key}/urlscreenshot=width:320,height:240,mode:window,delay:0/{site}/"
    )
    assert resp.headers["Content-Type"] == "image/png"
    assert (decoded(body).width, decoded(body).height) == (320, 240)
    assert colour_at(body, 10, 10) == [255, 0, 0]


async def test_mode_all_draws_the_whole_page_and_tasks_follow(harness: Harness, site: str) -> None:
    key = harness.open_app.api_key
    shot = f"/{key}/urlscreenshot=width:200,height:100,delay:0"
    _, body = await get(harness, f"{shot}/{site}/")
    assert (decoded(body).width, decoded(body).height) == (200, 2000)
    assert colour_at(body, 5, 100) == [255, 0, 0] and colour_at(body, 5, 1900) == [0, 0, 255]
    resp, body = await get(harness, f"{shot},mode:window/resize=width:50/output=format:jpg/{site}/")
    assert resp.headers["Content-Type"] == "image/jpeg"
    assert (decoded(body).width, decoded(body).height) == (50, 25)


async def test_a_device_and_its_orientation_set_the_window(harness: Harness, site: str) -> None:
    key = harness.open_app.api_key
    url = f"/{key}/urlscreenshot=device:iphone-x,orientation:landscape,mode:window"
    _, body = await get(harness, f"{url},delay:0/{site}/")
    assert (decoded(body).width, decoded(body).height) == (812, 375)


@pytest.mark.parametrize(
    "chain",
    [
        "urlscreenshot=width:0",
        "urlscreenshot=height:8001",
        "urlscreenshot=mode:half",
        "urlscreenshot=device:toaster",
        "flip/urlscreenshot",
    ],
)
async def test_bad_options_are_a_400(harness: Harness, chain: str) -> None:
    key = harness.open_app.api_key
    resp = await harness.cdn.get(f"/{key}/{chain}/http://{SITE}:9/")
    assert resp.status == 400


async def test_a_page_that_cannot_be_reached_is_a_502(harness: Harness) -> None:
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]  # bound, never listening: connections are refused
    key = harness.open_app.api_key
    try:
        resp = await harness.cdn.get(f"/{key}/urlscreenshot=delay:0/http://127.0.0.1:{port}/")
        assert resp.status == 502 and await code_of(resp) == "UPSTREAM_ERROR", await resp.text()
    finally:
        closed.close()


async def test_a_handle_source_is_a_400(harness: Harness) -> None:
    from tests.api.test_transform import stored

    handle = await stored(harness)
    resp = await harness.cdn.get(f"/urlscreenshot/{handle}")
    assert resp.status == 400 and await code_of(resp) == "INVALID_PARAMETER"


@pytest.mark.settings(fetch_allow_private=False)
@pytest.mark.parametrize(
    "target",
    [
        "http://127.0.0.1:{port}/",
        "http://localhost:{port}/",
        "http://2130706433:{port}/",
        "http://10.0.0.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://inside.test:{port}/",
    ],
)
async def test_an_internal_page_is_a_403_and_reaches_nothing(
    harness: Harness, listener: tuple[int, list[str]], site_is_public: None, target: str
) -> None:
    port, seen = listener
    key = harness.open_app.api_key
    resp = await harness.cdn.get(f"/{key}/urlscreenshot=delay:0/{target.format(port=port)}")
    assert resp.status == 403 and await code_of(resp) == "URL_FORBIDDEN"
    assert seen == []


@pytest.mark.settings(fetch_allow_private=False)
@pytest.mark.parametrize(
    "to",
    [
        "http://127.0.0.1:{port}/",
        "https://127.0.0.1:{port}/",
        "http://inside.test:{port}/",
        "http://169.254.169.254/",
    ],
)
async def test_a_redirect_inside_is_a_403_and_reaches_nothing(
    harness: Harness,
    site: str,
    listener: tuple[int, list[str]],
    site_is_public: None,
    to: str,
) -> None:
    port, seen = listener
    key = harness.open_app.api_key
    target = to.format(port=port)
    resp = await harness.cdn.get(f"/{key}/urlscreenshot=delay:0/{site}/away?to={target}")
    assert resp.status == 403 and await code_of(resp) == "URL_FORBIDDEN", await resp.text()
    assert seen == []


@pytest.mark.settings(fetch_allow_private=False)
@pytest.mark.parametrize("path", ["/img", "/fetch"])
async def test_a_subresource_inside_is_left_out_and_reaches_nothing(
    harness: Harness,
    site: str,
    listener: tuple[int, list[str]],
    site_is_public: None,
    path: str,
) -> None:
    _port, seen = listener
    key = harness.open_app.api_key
    _resp, body = await get(
        harness, f"/{key}/urlscreenshot=width:100,height:100,mode:window,delay:300/{site}{path}"
    )
    assert (decoded(body).width, decoded(body).height) == (100, 100)
    assert colour_at(body, 50, 50) == [255, 0, 0]
    assert seen == []


@pytest.mark.parametrize("path", ["/img", "/away"])
async def test_with_private_addresses_allowed_the_listener_does_see_the_request(
    harness: Harness, site: str, listener: tuple[int, list[str]], path: str
) -> None:
    """The control of the tests above: the same pages reach the listener (through the
    proxy) when the guard allows private addresses, as in these tests' settings."""
    _port, seen = listener
    key = harness.open_app.api_key
    resp = await harness.cdn.get(f"/{key}/urlscreenshot=delay:300,mode:window/{site}{path}")
    await resp.read()
    assert seen != []


@pytest.fixture
async def pages() -> AsyncIterator[tuple[str, dict[str, str]]]:
    """A site on 127.0.0.1 serving ``/<name>`` from the dict it yields."""
    served: dict[str, str] = {}

    async def page(request: web.Request) -> web.Response:
        html = served.get(request.match_info["name"])
        if html is None:
            return web.Response(status=404)
        return web.Response(text=html, content_type="text/html")

    app = web.Application()
    app.router.add_get("/{name}", page)
    runner = web.AppRunner(app)
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    port = tcp._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}", served
    await runner.cleanup()


DIALOGS = ("alert('a')", "confirm('c?')", "prompt('p?', 'x')")


def dialog_cases(seed: int = 26) -> list[tuple[tuple[str, ...], bool, tuple[int, int, int]]]:
    """(the dialogs a page opens in turn, whether after its load, the colour it then
    paints): each kind alone, several in a row, and ones opened after a delay."""
    rng = random.Random(seed)
    runs: list[tuple[tuple[str, ...], bool]] = [((d,), False) for d in DIALOGS]
    for late in (False, True):  # every kind, in a random order, and some more
        more = rng.choices(DIALOGS, k=rng.randint(0, 2))
        runs.append((tuple(rng.sample(DIALOGS, len(DIALOGS)) + more), late))
    runs.append(((rng.choice(DIALOGS),), True))
    colours = [(rng.randrange(256), rng.randrange(256), rng.randrange(256)) for _ in runs]
    return [(calls, late, rgb) for (calls, late), rgb in zip(runs, colours, strict=True)]


@pytest.mark.settings(screenshot_seconds=20)
@pytest.mark.parametrize(("calls", "late", "rgb"), dialog_cases())
async def test_javascript_dialogs_are_dismissed_and_the_page_is_drawn(
    harness: Harness,
    pages: tuple[str, dict[str, str]],
    calls: tuple[str, ...],
    late: bool,
    rgb: tuple[int, int, int],
) -> None:
    """A dialog stops the page's script until it is closed: the page paints its colour
    only after every one of them is."""
    base, served = pages
    paint = f"{';'.join(calls)};document.body.style.background='rgb{rgb}'"
    script = f"setTimeout(() => {{{paint}}}, 150)" if late else paint
    served["dialogs"] = f"<!doctype html><body style='margin:0'><script>{script}</script>"
    key = harness.open_app.api_key
    shot = f"urlscreenshot=width:120,height:90,mode:window,delay:{900 if late else 0}"
    resp = await harness.cdn.get(f"/{key}/{shot}/{base}/dialogs")
    body = await resp.read()
    assert resp.status == 200, body[:200]
    assert (decoded(body).width, decoded(body).height) == (120, 90)
    for x, y in ((5, 5), (60, 45), (114, 84)):
        assert all(abs(a - b) <= 2 for a, b in zip(colour_at(body, x, y), rgb, strict=True))
