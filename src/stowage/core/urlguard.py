"""The address guard of every fetch made for a user: which URLs may be asked for, read as
browsers read them (``check_url``), and which addresses a name may lead to (``is_public``,
``GuardedResolver``, which hands the connector only addresses that passed)."""

from __future__ import annotations

import ipaddress
import re
import socket
from urllib.parse import unquote

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from yarl import URL

from stowage import errors

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
#: The IPv6 forms whose last 32 bits are an IPv4 address the packet ends up at.
_LAST_32_BITS = [
    ipaddress.ip_network("64:ff9b::/96"),  # NAT64, RFC 6052
    ipaddress.ip_network("::/96"),  # IPv4-compatible ::a.b.c.d, deprecated (and ::, ::1)
    ipaddress.ip_network("::ffff:0:0:0/96"),  # IPv4-translated ::ffff:0:a.b.c.d, RFC 2765
]
_LOCAL_NAT64 = ipaddress.ip_network("64:ff9b:1::/48")  # RFC 8215: a site's own translator
#: ISATAP's interface identifier ``[0000|0200]:5efe:a.b.c.d`` (RFC 5214), its u and g bits masked.
_ISATAP_ID, _ISATAP_MASK = 0x00005EFE, 0xFCFFFFFF
_BLOCKED_NAMES = {"localhost", "metadata.google.internal", "metadata"}


def is_public(ip: IPAddress) -> bool:
    """An IPv6 address embedding an IPv4 one is judged by the IPv4 address it leads to."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return is_public(ip.ipv4_mapped)
        if ip.sixtofour is not None:
            return is_public(ip.sixtofour)
        if any(ip in net for net in _LAST_32_BITS) or _is_isatap(ip):
            return is_public(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
        if ip in _LOCAL_NAT64 or ip.teredo is not None:
            # a site's own translator reaches its own network; Teredo (2001::/32, its
            # server and obfuscated client both embedded) is a tunnel no origin sits behind
            return False
    return ip.is_global and not ip.is_multicast


def _is_isatap(ip: ipaddress.IPv6Address) -> bool:
    """Whatever the prefix: a site's ISATAP router delivers to the IPv4 address itself."""
    return (int(ip) >> 32) & _ISATAP_MASK == _ISATAP_ID


def parse_ip_literal(host: str) -> IPAddress | None:
    """Also catches the forms inet_aton accepts: 2130706433, 0177.0.0.1, 0x7f.1, 127.1."""
    host = host.strip("[]")
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except (OSError, ValueError):  # ValueError: a NUL or non-ASCII character
        return None


class GuardedResolver(AbstractResolver):
    def __init__(self, allow_private: bool) -> None:
        self._allow_private = allow_private
        self._inner = aiohttp.ThreadedResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        results = await self._inner.resolve(host, port, family)
        allowed = [r for r in results if self._allowed(ipaddress.ip_address(r["host"]))]
        if not allowed:
            raise errors.UrlForbidden("the url resolves to an internal address")
        return allowed

    def _allowed(self, ip: IPAddress) -> bool:
        return self._allow_private or is_public(ip)

    async def close(self) -> None:
        await self._inner.close()


def canonical_url(url: str) -> str:
    """The URL as the fetcher asks for it: dot segments resolved, escapes normalised. A
    policy's ``url`` pattern is matched against this, never the text as sent, so that
    ``/allowed/../other`` (sent percent-encoded) cannot reach ``/other``."""
    try:
        return str(URL(with_blanks_escaped(url)))
    except (ValueError, TypeError):
        return url  # malformed: the fetch refuses it (INVALID_URL)


_STRIPPED = re.compile("[\t\n\r]")


def with_blanks_escaped(url: str) -> str:
    """Tabs and line breaks percent-encoded, as every other control character is: the URL
    parser drops them (WHATWG's rule), and ``/a<TAB>b.png`` was fetched as ``/ab.png``,
    ``h<TAB>.com`` as ``h.com``: another file than the one named (in a host, the escape is
    refused as no host name)."""
    return _STRIPPED.sub(lambda found: f"%{ord(found[0]):02X}", url)


_NAME = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.?", re.I | re.ASCII)  # IDNA: ASCII
_IPV6 = re.compile(r"[0-9a-f:.]+", re.IGNORECASE)


def _is_host(raw_host: str) -> bool:
    """A DNS name (as IDNA sends it) or an address literal: nothing else resolves."""
    return bool(_NAME.fullmatch(raw_host) or (":" in raw_host and _IPV6.fullmatch(raw_host)))


def _host_decoded(parsed: URL) -> URL:
    """``parsed`` with its host percent-decoded, then IDNA-encoded, as browsers read one
    (WHATWG URL): a client sends ``http://müller.example/`` inside a request's path as
    ``m%C3%BCller.example``, which was no host name (400 INVALID_URL)."""
    raw = parsed.raw_host or ""
    if "%" not in raw or raw.startswith("["):
        return parsed
    return parsed.with_host(unquote(raw, errors="strict"))


def check_url(url: str, allow_private: bool) -> URL:
    """The checks that need no DNS: scheme, credentials, literal internal addresses.

    Names are checked where they resolve (``GuardedResolver``).
    """
    try:
        parsed = _host_decoded(URL(with_blanks_escaped(url)))
    except (ValueError, TypeError, UnicodeError) as exc:
        raise errors.InvalidUrl("the url is malformed") from exc
    if parsed.scheme not in ("http", "https") or not parsed.host or parsed.port == 0:
        raise errors.InvalidUrl("only http and https urls with a host and a port can be fetched")
    if parsed.user is not None or parsed.password is not None:
        raise errors.InvalidUrl("urls with credentials are not fetched")
    if "\\" in url:
        raise errors.InvalidUrl("backslashes are not allowed in urls")
    host = parsed.host.rstrip(".").lower()
    if any(c.isspace() or not c.isprintable() for c in host):
        # "127.0.0.1\x00" would otherwise slip past the literal check to the resolver
        raise errors.InvalidUrl("the url's host has control characters")
    if not _is_host(parsed.raw_host or ""):
        # "127<script>.0.0.1" is no name a resolver can answer: the client's mistake (400),
        # not an origin that cannot be reached (502)
        raise errors.InvalidUrl("the url's host is no host name or address")
    if not allow_private:
        if host in _BLOCKED_NAMES or host.endswith(".localhost"):
            raise errors.UrlForbidden()
        ip = parse_ip_literal(host)
        if ip is not None and not is_public(ip):
            raise errors.UrlForbidden()
    return parsed
