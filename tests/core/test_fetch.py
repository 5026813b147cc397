"""URL fetch guard (checklist items 26-34): no request may reach an internal address.

Only 127.0.0.1 is used. check_url never connects, so public addresses can be checked
without a network.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import random
import socket
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

import pytest
from aiohttp import web
from aiohttp.abc import ResolveResult
from hypothesis import given, settings
from hypothesis import strategies as st
from yarl import URL

from stowage import errors
from stowage.core import fetch
from stowage.core.fetch import Fetcher
from stowage.core.urlguard import GuardedResolver, is_public, parse_ip_literal


def make_fetcher(*, allow_private: bool = False, **overrides: Any) -> Fetcher:
    options: dict[str, Any] = {
        "allow_private": allow_private,
        "connect_timeout": 2.0,
        "read_timeout": 2.0,
        "total_timeout": 10.0,
        "max_redirects": 3,
        "max_bytes": 1024 * 1024,
        "max_concurrent": 4,
    }
    options.update(overrides)
    return Fetcher(**options)


# --- is_public / parse_ip_literal ---------------------------------------------------------

PRIVATE_IPS = [
    "127.0.0.1",
    "127.255.255.254",
    "0.0.0.0",
    "0.1.2.3",
    "10.0.0.1",
    "10.255.255.255",
    "172.16.0.1",
    "172.31.255.254",
    "192.168.0.1",
    "192.168.255.255",
    "169.254.169.254",
    "100.64.0.1",
    "198.18.0.1",
    "192.0.2.1",
    "224.0.0.1",
    "239.255.255.250",
    "240.0.0.1",
    "255.255.255.255",
    "::",
    "::1",
    "fe80::1",
    "fc00::1",
    "fd00:ec2::254",
    "ff02::1",
    "2001:db8::1",
    "::ffff:127.0.0.1",
    "::ffff:169.254.169.254",
    "::ffff:10.0.0.1",
    "::ffff:0.0.0.0",
    "64:ff9b::7f00:1",
    "64:ff9b::a9fe:a9fe",
    "64:ff9b::a00:1",
    "64:ff9b:1::7f00:1",
    "::7f00:1",
    "::a9fe:a9fe",
    "::ffff:0:7f00:1",
    "::ffff:0:a9fe:a9fe",
    "2002:7f00:1::1",
    "2002:a9fe:a9fe::",
    "2001:0:4136:e378:8000:63bf:3fff:fdd2",
    "2a00:1450:4001::5efe:7f00:1",
    "2a00:1450:4001:0:200:5efe:a9fe:a9fe",
]
PUBLIC_IPS = [
    "8.8.8.8",
    "1.1.1.1",
    "93.184.216.34",
    "172.15.255.255",
    "172.32.0.1",
    "192.169.0.1",
    "11.0.0.1",
    "2606:4700:4700::1111",
    "2a00:1450:4001::200e",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",
    "2002:808:808::1",
    "2a00:1450:4001::5efe:808:808",
]


@pytest.mark.parametrize("ip", PRIVATE_IPS)
def test_is_public_refuses_internal_addresses(ip: str) -> None:
    assert not is_public(ipaddress.ip_address(ip))


@pytest.mark.parametrize("ip", PUBLIC_IPS)
def test_is_public_allows_public_addresses(ip: str) -> None:
    assert is_public(ipaddress.ip_address(ip))


@given(st.ip_addresses(v=4))
@settings(max_examples=300, deadline=None)
def test_every_ipv4_embedding_agrees_with_the_plain_address(ip: ipaddress.IPv4Address) -> None:
    plain = is_public(ip)
    n = int(ip)
    for embedded in (
        ipaddress.IPv6Address(0xFFFF00000000 | n),  # ::ffff:a.b.c.d
        ipaddress.IPv6Address(0xFFFF << 48 | n),  # ::ffff:0:a.b.c.d, IPv4-translated
        ipaddress.IPv6Address(n),  # ::a.b.c.d, IPv4-compatible
        ipaddress.IPv6Address((0x64FF9B << 96) | n),  # 64:ff9b::a.b.c.d
        ipaddress.IPv6Address((0x2002 << 112) | (n << 80)),  # 6to4
    ):
        assert is_public(embedded) == plain, embedded


INTERNAL_V4 = [
    ipaddress.IPv4Network(net)
    for net in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/29",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "224.0.0.0/4",
        "240.0.0.0/4",
    )
]
INTERNAL_V4_ADDRESSES = st.sampled_from(INTERNAL_V4).flatmap(
    lambda net: st.integers(0, net.num_addresses - 1).map(lambda i: net[i])
)


GLOBAL_PREFIX = 0x2A00145040010000 << 64  # 2a00:1450:4001::/64, a public network


def ipv4_embeddings(n: int, other: int) -> dict[str, ipaddress.IPv6Address]:
    """Every IPv6 spelling that carries the IPv4 address ``n`` (``other``: the second
    IPv4 address a Teredo address holds)."""
    local_nat64 = 0x64FF9B0001 << 80
    forms = {
        "mapped ::ffff:0:0/96": 0xFFFF << 32 | n,
        "translated ::ffff:0:0:0/96": 0xFFFF << 48 | n,
        "compatible ::/96": n,
        "NAT64 64:ff9b::/96": 0x64FF9B << 96 | n,
        "local NAT64 64:ff9b:1::/48 (RFC 6052 /48 layout)": local_nat64
        | (n >> 16) << 64
        | (n & 0xFFFF) << 40,
        "local NAT64 64:ff9b:1::/48 (last 32 bits)": local_nat64 | n,
        "6to4 2002::/16": 0x2002 << 112 | n << 80,
        "Teredo 2001::/32 (server)": 0x20010000 << 96 | n << 64 | (other ^ 0xFFFFFFFF),
        "Teredo 2001::/32 (client)": 0x20010000 << 96 | other << 64 | (n ^ 0xFFFFFFFF),
        "ISATAP ::5efe:a.b.c.d (link-local)": 0xFE80 << 112 | 0x5EFE << 32 | n,
        "ISATAP ::200:5efe:a.b.c.d (global prefix)": GLOBAL_PREFIX | 0x02005EFE << 32 | n,
        "ISATAP ::100:5efe:a.b.c.d (group bit)": GLOBAL_PREFIX | 0x01005EFE << 32 | n,
        "ISATAP ::5efe:a.b.c.d (global prefix)": GLOBAL_PREFIX | 0x5EFE << 32 | n,
    }
    return {name: ipaddress.IPv6Address(value) for name, value in forms.items()}


@given(INTERNAL_V4_ADDRESSES, st.ip_addresses(v=4), st.integers(1, 65535))
@settings(max_examples=300, deadline=None)
def test_an_internal_ipv4_address_is_internal_in_every_ipv6_embedding(
    ip: ipaddress.IPv4Address, other: ipaddress.IPv4Address, port: int
) -> None:
    """``http://[::ffff:0:7f00:1]:PORT/`` (127.0.0.1, IPv4-translated) was connected to:
    an address that leads to an internal IPv4 one is internal, however it is spelt, both
    as a literal (403 before any request) and as what a name resolves to."""
    assert not is_public(ip)
    for name, embedded in ipv4_embeddings(int(ip), int(other)).items():
        assert not is_public(embedded), (name, embedded)
        with pytest.raises(errors.UrlForbidden):
            make_fetcher().check_url(f"http://[{embedded}]:{port}/x.png")


async def test_the_resolver_refuses_every_ipv6_spelling_of_an_internal_address() -> None:
    """What a name resolves to is held to the same rule (the getaddrinfo of a literal)."""
    rng = random.Random(7)
    resolver = GuardedResolver(allow_private=False)
    try:
        for _ in range(5):
            net = rng.choice(INTERNAL_V4)
            n = int(net[rng.randrange(net.num_addresses)])
            for name, embedded in ipv4_embeddings(n, rng.getrandbits(32)).items():
                with pytest.raises(errors.UrlForbidden):
                    await resolver.resolve(str(embedded), 80, socket.AF_INET6)
                    pytest.fail(f"{name}: {embedded} resolved")
    finally:
        await resolver.close()


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("127.0.1", "127.0.0.1"),
        ("0", "0.0.0.0"),
        ("[::1]", "::1"),
        ("::1", "::1"),
        ("[::ffff:127.0.0.1]", "::ffff:7f00:1"),
        ("64:ff9b::7f00:1", "64:ff9b::7f00:1"),
        ("8.8.8.8", "8.8.8.8"),
    ],
)
def test_parse_ip_literal_catches_every_spelling(host: str, expected: str) -> None:
    assert parse_ip_literal(host) == ipaddress.ip_address(expected)


@pytest.mark.parametrize(
    "host", ["example.com", "localhost", "1.2.3.4.5", "4294967296", "", "a\x00b", "é.com"]
)
def test_parse_ip_literal_returns_none_for_names(host: str) -> None:
    assert parse_ip_literal(host) is None


# --- check_url ----------------------------------------------------------------------------

FORBIDDEN_URLS = [
    "http://127.0.0.1/",
    "http://127.0.0.1:8080/admin",
    "http://127.0.0.1./",
    "http://localhost/",
    "http://LOCALHOST/",
    "http://localhost./",
    "http://app.localhost/",
    "http://0.0.0.0/",
    "http://[::1]/",
    "http://[::]/",
    "http://169.254.169.254/latest/meta-data/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://METADATA.google.internal./",
    "http://metadata/",
    "http://2130706433/",
    "http://0177.0.0.1/",
    "http://0x7f.1/",
    "http://0x7f000001/",
    "http://127.1/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:169.254.169.254]/",
    "http://[::ffff:7f00:1]/",
    "http://[64:ff9b::7f00:1]/",
    "http://[::127.0.0.1]/",
    "http://[fe80::1]/",
    "http://10.0.0.1/",
    "http://10.1.2.3/",
    "http://172.16.0.1/",
    "http://172.31.0.1/",
    "http://192.168.0.1/",
    "http://192.168.1.1:80/",
    "https://100.64.0.1/",
]


@pytest.mark.parametrize("url", FORBIDDEN_URLS)
def test_check_url_forbids_internal_hosts(url: str) -> None:
    with pytest.raises(errors.UrlForbidden):
        make_fetcher().check_url(url)


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "file://localhost/etc/passwd",
        "gopher://127.0.0.1:6379/_INFO",
        "ftp://example.com/file",
        "data:text/plain;base64,SGVsbG8=",
        "redis://127.0.0.1:6379/",
        "dict://127.0.0.1:11211/",
        "ws://example.com/",
        "javascript:alert(1)",
        "//example.com/x",
        "/relative/path",
        "http:///path",
        "http:/example.com",
        "",
        "not a url",
        "http://allowed@127.0.0.1/",
        "http://allowed.com@127.0.0.1/",
        "http://user:pass@example.com/",
        "http://127.0.0.1:80@example.com/",
        "http://:@example.com/",
        "http://example.com\\@127.0.0.1/",
        "http://127.0.0.1\\@example.com/",
        "http://example.com/\\..\\",
        "http:\\\\127.0.0.1\\",
        "http://[::1/",
        "http://127.0.0.1\x00/",
        "http://127.0.0.1\x00.example.com/",
        "http://example.com\x00.127.0.0.1/",
    ],
)
def test_check_url_refuses_other_schemes_credentials_and_backslashes(url: str) -> None:
    with pytest.raises((errors.InvalidUrl, errors.UrlForbidden)):
        make_fetcher().check_url(url)


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "gopher://127.0.0.1:6379/_INFO",
        "http://allowed@127.0.0.1/",
        "http://a\\@127.0.0.1/",
    ],
)
def test_check_url_refuses_even_when_private_is_allowed(url: str) -> None:
    with pytest.raises(errors.InvalidUrl):
        make_fetcher(allow_private=True).check_url(url)


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com/",
        "https://example.com/a/b.png?x=1#frag",
        "HTTPS://Example.COM/x",
        "http://8.8.8.8/",
        "http://[2606:4700:4700::1111]/",
        "http://[::ffff:8.8.8.8]/",
        "http://172.32.0.1:8080/",
        "https://allowed.com.evil.net/",
        "http://xn--nxasmq6b.com/",
        "http://bücher.example/",
    ],
)
def test_check_url_allows_public_urls(url: str) -> None:
    parsed = make_fetcher().check_url(url)
    assert parsed.scheme in ("http", "https")
    assert parsed.host


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:1/", "http://localhost/", "http://[::1]/", "http://10.0.0.1/"]
)
def test_check_url_with_allow_private_passes_loopback(url: str) -> None:
    assert make_fetcher(allow_private=True).check_url(url).host


@given(st.ip_addresses())
@settings(max_examples=300, deadline=None)
def test_check_url_agrees_with_is_public_for_every_literal(
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> None:
    host = f"[{ip}]" if ip.version == 6 else str(ip)
    fetcher = make_fetcher()
    if is_public(ip):
        assert fetcher.check_url(f"http://{host}/").host
    else:
        with pytest.raises(errors.UrlForbidden):
            fetcher.check_url(f"http://{host}/")


@given(st.text(max_size=80))
@settings(max_examples=300, deadline=None)
def test_check_url_raises_only_stowage_errors(text: str) -> None:
    for url in (text, "http://" + text, "https://" + text + "/x"):
        with contextlib.suppress(errors.StowageError):
            make_fetcher().check_url(url)


HOST_CHARS = st.sampled_from([*"ab9-_.:", "<", ">", "'", '"', "{", "|", "^", "`", "é"])


@given(st.text(HOST_CHARS, min_size=1, max_size=24))
@settings(max_examples=400, deadline=None)
def test_a_host_that_no_resolver_can_answer_is_a_malformed_url(host: str) -> None:
    """``127<script>.0.0.1`` reached the resolver and answered 502 (an origin down) for
    what is the client's mistake: only a DNS name or an address literal goes on."""
    try:
        parsed = make_fetcher(allow_private=True).check_url(f"http://{host}/x")
    except errors.StowageError as exc:
        assert exc.status < 500
        return
    raw = parsed.raw_host or ""
    assert all(c.isalnum() or c in "-_.:" for c in raw) and ".." not in raw, raw


@given(st.text(st.sampled_from([*"abcxyz", "ü", "é", "ß", "ж", "中"]), min_size=1, max_size=12))
@settings(max_examples=100, deadline=None)
def test_a_percent_encoded_international_host_is_its_idna_name(label: str) -> None:
    """A client sends ``http://müller.example/`` inside a request's path percent-encoded
    (``m%C3%BCller.example``): it was 400 INVALID_URL, where browsers read the name."""
    host = f"{label}.example"
    encoded = quote(host, safe=".")
    parsed = make_fetcher().check_url(f"http://{encoded}/a.png")
    assert parsed.raw_host == URL(f"http://{host}/").raw_host
    assert parsed.raw_host is not None and parsed.raw_host.isascii()


ENCODED_INTERNAL = ["127%2e0%2e0%2e1", "%31%32%37.0.0.1", "local%68ost", "10%2e0.0.1"]


@pytest.mark.parametrize("host", ENCODED_INTERNAL)
def test_a_percent_encoded_internal_host_is_still_forbidden(host: str) -> None:
    with pytest.raises(errors.UrlForbidden):
        make_fetcher().check_url(f"http://{host}/x")


# --- GuardedResolver ----------------------------------------------------------------------


async def test_guarded_resolver_refuses_localhost() -> None:
    resolver = GuardedResolver(allow_private=False)
    try:
        with pytest.raises(errors.UrlForbidden):
            await resolver.resolve("localhost", 80, socket.AF_INET)
        with pytest.raises(errors.UrlForbidden):
            await resolver.resolve("127.0.0.1", 80, socket.AF_INET)
    finally:
        await resolver.close()


async def test_guarded_resolver_allows_localhost_when_private_is_allowed() -> None:
    resolver = GuardedResolver(allow_private=True)
    try:
        results = await resolver.resolve("localhost", 80, socket.AF_INET)
    finally:
        await resolver.close()
    assert results
    assert all(ipaddress.ip_address(r["host"]).is_loopback for r in results)


# --- real fetches against a local server --------------------------------------------------


class Upstream:
    """A small aiohttp server on 127.0.0.1 with the shapes of trouble a source can take."""

    def __init__(self) -> None:
        self.stop = asyncio.Event()
        self.hits: list[str] = []
        self.runner: web.AppRunner | None = None
        self.port = 0
        self.redirect_to = ""
        self.bare_redirect: tuple[int, str | None] = (302, None)

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/file.txt", self.file)
        app.router.add_get("/named", self.named)
        app.router.add_get("/big-declared", self.big_declared)
        app.router.add_get("/endless", self.endless)
        app.router.add_get("/stall", self.stall)
        app.router.add_get("/missing", self.missing)
        app.router.add_get("/broken", self.broken)
        app.router.add_get("/loop", self.loop)
        app.router.add_get("/hop/{n}", self.hop)
        app.router.add_get("/redirect", self.redirect)
        app.router.add_get("/bare-redirect", self.redirect_nowhere)
        app.router.add_get("/status/{n}", self.status)
        self.runner = web.AppRunner(app, handle_signals=False)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", 0).start()
        self.port = self.runner.addresses[0][1]

    async def close(self) -> None:
        self.stop.set()
        assert self.runner is not None
        await self.runner.cleanup()

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    async def file(self, request: web.Request) -> web.Response:
        self.hits.append(request.path)
        return web.Response(body=b"hello world", content_type="text/plain")

    async def named(self, request: web.Request) -> web.Response:
        self.hits.append(request.path)
        return web.Response(
            body=b"%PDF-1.4",
            headers={
                "Content-Type": "application/pdf",
                "Content-Disposition": 'attachment; filename="report 1.pdf"',
            },
        )

    async def big_declared(self, request: web.Request) -> web.Response:
        self.hits.append(request.path)
        return web.Response(body=b"x" * 5000)

    async def endless(self, request: web.Request) -> web.StreamResponse:
        self.hits.append(request.path)
        response = web.StreamResponse()
        await response.prepare(request)
        try:
            while not self.stop.is_set():
                await response.write(b"z" * 4096)
        except (ConnectionError, RuntimeError):
            pass
        return response

    async def stall(self, request: web.Request) -> web.StreamResponse:
        self.hits.append(request.path)
        response = web.StreamResponse()
        response.content_length = 1000
        await response.prepare(request)
        await response.write(b"a" * 10)
        await self.stop.wait()
        return response

    async def missing(self, request: web.Request) -> web.Response:
        self.hits.append(request.path)
        return web.Response(status=404, text="nope")

    async def broken(self, request: web.Request) -> web.Response:
        self.hits.append(request.path)
        return web.Response(status=500, text="boom")

    async def loop(self, request: web.Request) -> web.Response:
        self.hits.append(request.path)
        raise web.HTTPFound("/loop")

    async def hop(self, request: web.Request) -> web.Response:
        self.hits.append(request.path)
        n = int(request.match_info["n"])
        if n == 0:
            return web.Response(body=b"arrived")
        raise web.HTTPFound(f"/hop/{n - 1}")

    async def status(self, request: web.Request) -> web.Response:
        self.hits.append(request.path)
        code = int(request.match_info["n"])
        no_body = code in (204, 304) or code < 200
        return web.Response(status=code, body=None if no_body else b"partial")

    async def redirect(self, request: web.Request) -> web.Response:
        self.hits.append(request.path)
        # a raw header: the client must cope with whatever a server sends
        return web.Response(status=302, headers={"Location": self.redirect_to})

    async def redirect_nowhere(self, request: web.Request) -> web.Response:
        self.hits.append(request.path)
        code, location = self.bare_redirect
        return web.Response(status=code, headers={} if location is None else {"Location": location})


@pytest.fixture
async def upstream() -> AsyncIterator[Upstream]:
    server = Upstream()
    await server.start()
    yield server
    await server.close()


@pytest.fixture
async def fetcher_factory() -> AsyncIterator[Any]:
    made: list[Fetcher] = []

    def factory(**options: Any) -> Fetcher:
        made.append(make_fetcher(**options))
        return made[-1]

    yield factory
    for fetcher in made:
        await fetcher.close()


async def read_all(fetched: fetch.Fetched) -> bytes:
    return b"".join([chunk async for chunk in fetched.chunks])


async def test_loopback_fetch_is_refused_without_a_request(
    upstream: Upstream, fetcher_factory: Any
) -> None:
    fetcher = fetcher_factory(allow_private=False)
    for host in ("127.0.0.1", "localhost", "[::ffff:127.0.0.1]", "2130706433", "127.1"):
        with pytest.raises(errors.UrlForbidden):
            await fetcher.open(upstream.url("/file.txt", host))
    assert upstream.hits == []


async def test_name_resolving_to_loopback_is_refused_by_the_resolver(
    upstream: Upstream, fetcher_factory: Any
) -> None:
    # /etc/hosts maps this machine's own name to loopback; check_url cannot know that
    # without resolving, so it is the resolver that must refuse it.
    name = socket.gethostname().lower()
    addresses = {info[4][0] for info in socket.getaddrinfo(name, upstream.port)}
    if any(is_public(ipaddress.ip_address(a)) for a in addresses):
        pytest.fail(f"{name} resolves to a public address here: {addresses}")
    fetcher = fetcher_factory(allow_private=False)
    assert fetcher.check_url(upstream.url("/file.txt", name)).host == name
    with pytest.raises(errors.UrlForbidden):
        await fetcher.open(upstream.url("/file.txt", name))
    assert upstream.hits == []


async def test_loopback_fetch_works_when_private_is_allowed(
    upstream: Upstream, fetcher_factory: Any
) -> None:
    fetcher = fetcher_factory(allow_private=True)
    fetched = await fetcher.open(upstream.url("/file.txt"))
    assert fetched.content_type is not None and fetched.content_type.startswith("text/plain")
    assert fetched.filename == "file.txt"
    assert fetched.length == 11
    assert await read_all(fetched) == b"hello world"


async def test_content_disposition_names_the_file(upstream: Upstream, fetcher_factory: Any) -> None:
    fetched = await fetcher_factory(allow_private=True).open(upstream.url("/named"))
    assert fetched.filename == "report 1.pdf"
    assert fetched.content_type == "application/pdf"
    assert await read_all(fetched) == b"%PDF-1.4"


TRUSTED_NAME = "upstream.test"


class _FakePublicName(GuardedResolver):
    """Stands in for DNS giving a public server: one made-up name leads to the local test
    server, as if it were public. Every other name goes through the real guard."""

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        if host == TRUSTED_NAME:
            return [
                ResolveResult(
                    hostname=host,
                    host="127.0.0.1",
                    port=port,
                    family=socket.AF_INET,
                    proto=0,
                    flags=socket.AI_NUMERICHOST,
                )
            ]
        return await super().resolve(host, port, family)


@pytest.fixture
def trusted_upstream_name(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(fetch, "GuardedResolver", _FakePublicName)
    return TRUSTED_NAME


@pytest.mark.parametrize(
    "target",
    [
        "http://127.0.0.1:{port}/file.txt",
        "http://localhost:{port}/file.txt",
        "http://[::1]:{port}/file.txt",
        "http://[::ffff:127.0.0.1]:{port}/file.txt",
        "http://2130706433:{port}/file.txt",
        "http://0x7f.1:{port}/file.txt",
        "http://169.254.169.254/latest/meta-data/",
        "http://{hostname}:{port}/file.txt",
        "//127.0.0.1:{port}/file.txt",
        "//localhost:{port}/file.txt",
        "/file.txt?next=http://127.0.0.1/",
        "file:///etc/passwd",
        "gopher://127.0.0.1:{port}/_x",
        "http://allowed@127.0.0.1:{port}/file.txt",
    ],
)
async def test_redirect_to_an_internal_address_is_refused(
    upstream: Upstream, fetcher_factory: Any, trusted_upstream_name: str, target: str
) -> None:
    upstream.redirect_to = target.format(port=upstream.port, hostname=socket.gethostname())
    fetcher = fetcher_factory(allow_private=False)
    # The trusted name itself is reachable (the guard was loosened for it alone) ...
    fetched = await fetcher.open(upstream.url("/file.txt", trusted_upstream_name))
    assert await read_all(fetched) == b"hello world"
    # ... but a redirect from it to an internal address is not followed.
    if target.startswith("/file"):  # a relative redirect stays on the trusted host: allowed
        fetched = await fetcher.open(upstream.url("/redirect", trusted_upstream_name))
        assert await read_all(fetched) == b"hello world"
        assert upstream.hits == ["/file.txt", "/redirect", "/file.txt"]
        return
    with pytest.raises((errors.UrlForbidden, errors.UpstreamError)):
        await fetcher.open(upstream.url("/redirect", trusted_upstream_name))
    assert upstream.hits == ["/file.txt", "/redirect"]


async def test_redirects_are_followed_hop_by_hop_up_to_the_limit(
    upstream: Upstream, fetcher_factory: Any
) -> None:
    fetcher = fetcher_factory(allow_private=True, max_redirects=3)
    fetched = await fetcher.open(upstream.url("/hop/3"))
    assert await read_all(fetched) == b"arrived"
    assert upstream.hits == ["/hop/3", "/hop/2", "/hop/1", "/hop/0"]
    upstream.hits.clear()
    with pytest.raises(errors.UpstreamError, match="too many redirects"):
        await fetcher.open(upstream.url("/hop/4"))
    assert upstream.hits == ["/hop/4", "/hop/3", "/hop/2", "/hop/1"]


async def test_endless_redirect_loop_stops(upstream: Upstream, fetcher_factory: Any) -> None:
    fetcher = fetcher_factory(allow_private=True, max_redirects=5)
    with pytest.raises(errors.UpstreamError):
        await fetcher.open(upstream.url("/loop"))
    assert len(upstream.hits) == 6


async def test_zero_redirects_allowed(upstream: Upstream, fetcher_factory: Any) -> None:
    fetcher = fetcher_factory(allow_private=True, max_redirects=0)
    assert await read_all(await fetcher.open(upstream.url("/hop/0"))) == b"arrived"
    with pytest.raises(errors.UpstreamError):
        await fetcher.open(upstream.url("/hop/1"))


@pytest.mark.parametrize(
    "location",
    [
        "file:///etc/passwd",
        "ftp://example.com/x.png",
        "javascript:alert(1)",
        "data:image/png;base64,AAAA",
        "gopher://127.0.0.1:70/",
        "http://user:secret@example.com/x",
    ],
)
async def test_redirect_to_another_scheme_is_refused_with_private_allowed(
    upstream: Upstream, fetcher_factory: Any, location: str
) -> None:
    """The origin chose the location, not the client: 502 naming the redirect, never the
    client's 400 INVALID_URL; the location is never asked for."""
    upstream.redirect_to = location
    with pytest.raises(errors.UpstreamError, match="redirected") as caught:
        await fetcher_factory(allow_private=True).open(upstream.url("/redirect"))
    assert caught.value.status == 502
    assert upstream.hits == ["/redirect"]


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
@pytest.mark.parametrize("location", [None, "", "   "], ids=["absent", "empty", "blank"])
async def test_a_redirect_without_a_location_says_so(
    upstream: Upstream, fetcher_factory: Any, code: int, location: str | None
) -> None:
    """Not "too many redirects": one redirect, to nowhere."""
    upstream.bare_redirect = (code, location)
    fetcher = fetcher_factory(allow_private=True, max_redirects=3)
    with pytest.raises(errors.UpstreamError, match="Location") as caught:
        await fetcher.open(upstream.url("/bare-redirect"))
    assert str(code) in caught.value.message and "too many" not in caught.value.message
    assert upstream.hits == ["/bare-redirect"]


@pytest.mark.parametrize(
    "location",
    ["http://[bad/", "http://a\\@127.0.0.1/", "http://127.0.0.1:99999/", "http://[::1/x"],
)
async def test_malformed_redirect_location_is_an_upstream_error(
    upstream: Upstream, fetcher_factory: Any, location: str
) -> None:
    upstream.redirect_to = location
    with pytest.raises(errors.UpstreamError):
        await fetcher_factory(allow_private=True).open(upstream.url("/redirect"))
    assert upstream.hits == ["/redirect"]


async def test_endless_body_hits_max_bytes(upstream: Upstream, fetcher_factory: Any) -> None:
    fetcher = fetcher_factory(allow_private=True, max_bytes=100_000)
    fetched = await fetcher.open(upstream.url("/endless"))
    assert fetched.length is None
    received = 0
    with pytest.raises(errors.PayloadTooLarge):
        async for chunk in fetched.chunks:
            received += len(chunk)
    assert received <= 100_000


async def test_declared_length_over_max_bytes_is_refused_before_reading(
    upstream: Upstream, fetcher_factory: Any
) -> None:
    fetcher = fetcher_factory(allow_private=True, max_bytes=4999)
    with pytest.raises(errors.PayloadTooLarge):
        await fetcher.open(upstream.url("/big-declared"))
    fetcher = fetcher_factory(allow_private=True, max_bytes=5000)
    assert len(await read_all(await fetcher.open(upstream.url("/big-declared")))) == 5000


async def test_stalled_body_hits_the_read_timeout(upstream: Upstream, fetcher_factory: Any) -> None:
    fetcher = fetcher_factory(allow_private=True, read_timeout=0.3)
    fetched = await fetcher.open(upstream.url("/stall"))
    got = b""
    with pytest.raises(errors.UpstreamTimeout):
        async for chunk in fetched.chunks:
            got += chunk
    assert got == b"a" * 10


@pytest.mark.parametrize(("path", "status"), [("/missing", 404), ("/broken", 500)])
async def test_error_status_is_an_upstream_error(
    upstream: Upstream, fetcher_factory: Any, path: str, status: int
) -> None:
    with pytest.raises(errors.UpstreamError, match=str(status)):
        await fetcher_factory(allow_private=True).open(upstream.url(path))


NO_FILE = st.sampled_from([201, 202, 204, 205, 206, 226, 300, 304, 305, 400, 418, 503, 599])


@settings(max_examples=20, deadline=None)
@given(code=NO_FILE, conditional=st.booleans())
async def test_only_a_200_is_a_file(code: int, conditional: bool) -> None:
    """A 204, a 206 never asked for, or a 304 to an unconditional GET holds no file: kept,
    it would be an empty or partial file under a new handle."""
    server = Upstream()
    await server.start()
    fetcher = make_fetcher(allow_private=True)
    try:
        validators = {"If-None-Match": '"v1"'} if conditional else {}
        if code == 304 and conditional:
            fetched = await fetcher.open(server.url("/status/304"), validators)
            assert fetched.not_modified
            await read_all(fetched)
            return
        with pytest.raises(errors.UpstreamError, match=str(code)):
            await fetcher.open(server.url(f"/status/{code}"), validators)
        for ok in (200, 203):
            assert await read_all(await fetcher.open(server.url(f"/status/{ok}"))) == b"partial"
    finally:
        await fetcher.close()
        await server.close()


async def test_connection_refused_is_an_upstream_error(fetcher_factory: Any) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound but not listening: connection refused
        with pytest.raises(errors.UpstreamError):
            await fetcher_factory(allow_private=True).open(f"http://127.0.0.1:{port}/")


async def test_slots_are_released_after_every_outcome(
    upstream: Upstream, fetcher_factory: Any
) -> None:
    fetcher = fetcher_factory(allow_private=True, max_concurrent=1, max_bytes=4999)

    async def attempts() -> None:
        for _ in range(2):
            with pytest.raises(errors.UpstreamError):
                await fetcher.open(upstream.url("/missing"))
            with pytest.raises(errors.PayloadTooLarge):
                await fetcher.open(upstream.url("/big-declared"))
            with pytest.raises(errors.UrlForbidden):
                await make_fetcher_like(fetcher).open(upstream.url("/file.txt"))
            assert await read_all(await fetcher.open(upstream.url("/file.txt"))) == b"hello world"
            fetched = await fetcher.open(upstream.url("/file.txt"))
            await fetched.chunks.aclose()  # closed without reading a byte

    def make_fetcher_like(_: Fetcher) -> Fetcher:
        guarded: Fetcher = fetcher_factory(allow_private=False, max_concurrent=1)
        return guarded

    await asyncio.wait_for(attempts(), timeout=10)


async def test_concurrency_is_bounded(upstream: Upstream, fetcher_factory: Any) -> None:
    fetcher = fetcher_factory(allow_private=True, max_concurrent=1)
    first = await fetcher.open(upstream.url("/file.txt"))
    second = asyncio.ensure_future(fetcher.open(upstream.url("/file.txt")))
    await asyncio.sleep(0.2)
    assert not second.done()
    assert await read_all(first) == b"hello world"
    assert await read_all(await asyncio.wait_for(second, 5)) == b"hello world"
