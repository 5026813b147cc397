"""Fetching a file from a user-given URL without letting it reach inside the network.

Every address is checked where it is actually used: the resolver hands the
connector only addresses that passed the guard, so the IP connected to is the
IP checked (no DNS rebinding window). Redirects are followed by hand, each hop
checked again. Only http and https.
"""

from __future__ import annotations

import asyncio
import ipaddress
import math
import re
import socket
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass
from urllib.parse import unquote

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from yarl import URL

from stowage import __version__, errors
from stowage.core import codings, dispositions
from stowage.core.fetchphases import Phases
from stowage.core.fetchslots import FetchSlots, Owner, paced

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


#: Some origins refuse aiohttp's own (``fetch_user_agent``).
DEFAULT_AGENT = f"Stowage/{__version__} (+url-fetch)"
_FILE_STATUSES = (200, 203)  # 203: a proxy's copy of the 200


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


def guarded_session(
    allow_private: bool,
    timeout: aiohttp.ClientTimeout,
    *,
    decompress: bool = True,
    traces: list[aiohttp.TraceConfig] | None = None,
) -> aiohttp.ClientSession:
    """An HTTP client that connects only to addresses the guard allows: every request to a
    user-given URL (fetches, webhooks) goes through one of these."""
    connector = aiohttp.TCPConnector(resolver=GuardedResolver(allow_private), use_dns_cache=False)
    return aiohttp.ClientSession(
        connector=connector,
        timeout=timeout,
        auto_decompress=decompress,
        trust_env=False,  # never through a proxy the guard cannot see past
        trace_configs=traces,
    )


@dataclass
class Fetched:
    chunks: AsyncIterator[bytes]
    content_type: str | None
    filename: str | None
    length: int | None
    #: The validators the origin sent, for a conditional fetch later (``validators``).
    etag: str | None = None
    last_modified: str | None = None
    not_modified: bool = False  # a conditional fetch answered 304: no body
    #: The origin's ``Cache-Control`` and ``Vary`` (each line joined): may a copy be kept.
    cache_control: str | None = None
    vary: str | None = None
    #: The address that answered (after any redirects): the one the validators are of.
    url: str | None = None


#: Asked about each address a redirect leads to; raises a StowageError to refuse it.
Allowed = Callable[[str], None]


class Fetcher:
    def __init__(
        self,
        *,
        allow_private: bool,
        connect_timeout: float,
        read_timeout: float,
        total_timeout: float,
        max_redirects: int,
        max_bytes: int,
        max_concurrent: int,
        per_app: int | None = None,
        slot_wait: float = math.inf,
        min_rate: float = 0.0,
        background_slot_wait: float = math.inf,
        user_agent: str = DEFAULT_AGENT,
    ) -> None:
        self.allow_private = allow_private
        self.max_redirects = max_redirects
        self.max_bytes = max_bytes
        self._timeout = aiohttp.ClientTimeout(
            total=total_timeout, sock_connect=connect_timeout, sock_read=read_timeout
        )
        self._phases = (connect_timeout, read_timeout)
        self._total = total_timeout if total_timeout > 0 else None
        self._slots = FetchSlots(max_concurrent, per_app, slot_wait)
        self._background_wait = background_slot_wait  # a background job's wait for a slot
        # a body's bytes a second, averaged over read_timeout: a drip is no progress
        self._pace = (min_rate, read_timeout if read_timeout > 0 else 30.0)
        self._session: aiohttp.ClientSession | None = None
        self._agent = user_agent

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            # auto_decompress off: a gzip bomb stays the size it was sent at
            self._session = guarded_session(
                self.allow_private, self._timeout, decompress=False, traces=[Phases.tracing()]
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    def check_url(self, url: str) -> URL:
        return check_url(url, self.allow_private)

    @property
    def per_request(self) -> int:
        """The fetches one request's list of URLs runs at once: half its app's slots, so
        that a list leaves the app's other requests some (``listfetch``)."""
        return max(1, self._slots.per_owner // 2)

    @property
    def slot_wait(self) -> float:
        """The seconds a fetch waits for a slot, then FETCH_BUSY (``fetch_slot_wait``)."""
        return self._slots.wait

    @property
    def waiting(self) -> int:
        """Fetches waiting for a slot now."""
        return self._slots.waiting

    async def open(
        self,
        url: str,
        validators: dict[str, str] | None = None,
        allowed: Allowed | None = None,
        owner: Owner = None,
        background: bool = False,
        slot_wait: float | None = None,
        validated: str | None = None,
    ) -> Fetched:
        """Start the fetch; the caller must consume ``chunks`` to the end or close it.
        ``validators``: ``If-None-Match`` / ``If-Modified-Since`` of a copy already held;
        a 304 answers ``not_modified`` with no body. ``allowed`` is asked about every
        address a redirect leads to (a policy's ``url`` rule) and raises to refuse it.
        ``owner``: the app fetching, held to its share of the slots (``FetchSlots``).
        ``background``: a job no client waits on (a video conversion) fetches: it waits
        ``background_slot_wait`` for a slot, not ``slot_wait``; ``slot_wait``: another
        bound for this fetch's wait (a list's reader: ``listfetch``). ``validated``: the
        address that sent ``validators`` (``Fetched.url`` of the copy held; None: ``url``
        itself); they are sent to that address only, never to another one a redirect now
        leads to, whose older ``Last-Modified`` answered 304 for the other file's copy."""
        wait = self._background_wait if background else slot_wait
        free = await self._slots.acquire(owner, wait)
        try:
            # every hop has its own bounds: the redirects together have total_timeout
            async with asyncio.timeout(self._total):
                held = (validators or {}, validated if validated is not None else url)
                response = await self._follow(self.check_url(url), held, allowed)
        except TimeoutError as exc:
            free()
            raise errors.UpstreamTimeout("the url source took longer than allowed") from exc
        except BaseException:
            free()
            raise
        release = _releaser(response, free)
        coding = _coding(response)
        return Fetched(
            chunks=_Body(self._body(response, release, coding), release),
            content_type=response.headers.get("Content-Type"),
            filename=dispositions.filename(
                response.headers.get("Content-Disposition"), response.url.raw_path
            ),
            length=response.content_length if coding == "identity" else None,
            etag=response.headers.get("ETag"),
            last_modified=response.headers.get("Last-Modified"),
            not_modified=response.status == 304,
            cache_control=_joined(response, "Cache-Control"),
            vary=_joined(response, "Vary"),
            url=str(response.url),
        )

    async def _follow(
        self, url: URL, held: tuple[dict[str, str], str], allowed: Allowed | None
    ) -> aiohttp.ClientResponse:
        """``held``: the validators of a copy held, and the address they are of."""
        validators, validated = held
        for _ in range(self.max_redirects + 1):
            # Only the address that gave them: another one judges them against its file.
            sent = validators if validators and _same_address(url, validated) else {}
            response = await self._request(url, sent)
            if response.status not in (301, 302, 303, 307, 308):
                return self._accept(response, conditional=bool(sent))
            location = response.headers.get("Location", "").strip()
            response.release()
            if not location:
                raise errors.UpstreamError(f"the url answered {response.status} with no Location")
            try:
                target = str(url.join(URL(location)))
            except (ValueError, TypeError) as exc:  # "http://[bad/", a port past 65535
                raise errors.UpstreamError("the url redirected to a malformed location") from exc
            try:
                url = self.check_url(target)
            except errors.InvalidUrl as exc:  # the origin chose ftp: or javascript:, not the client
                raise errors.UpstreamError(
                    f"the url redirected to a location that is not fetched: {exc.message}"
                ) from exc
            if allowed is not None:
                allowed(str(url))
        raise errors.UpstreamError("too many redirects")

    async def _request(self, url: URL, validators: dict[str, str]) -> aiohttp.ClientResponse:
        headers = {**validators, "Accept-Encoding": "identity", "User-Agent": self._agent}
        try:
            async with asyncio.timeout(None) as bound:
                phases = Phases(bound, *self._phases)
                return await self._client().get(
                    url, allow_redirects=False, headers=headers, trace_request_ctx=phases
                )
        except errors.StowageError:
            raise
        except TimeoutError as exc:
            raise errors.UpstreamTimeout() from exc
        except aiohttp.ClientConnectorError as exc:
            cause = exc.__cause__ or exc.__context__
            if isinstance(cause, errors.StowageError):
                raise cause from exc
            raise errors.UpstreamError("could not connect to the url") from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise errors.UpstreamError("the url could not be fetched") from exc

    def _accept(
        self, response: aiohttp.ClientResponse, conditional: bool
    ) -> aiohttp.ClientResponse:
        # Only a 200 carries the file: a 204 or an unasked 304 or 206 is no file to keep
        # (stored, it would be an empty or partial file under a new handle).
        fine = response.status in _FILE_STATUSES or (conditional and response.status == 304)
        if not fine:
            response.release()
            raise errors.UpstreamError(f"the url answered {response.status}, not a file")
        length = response.content_length
        if length is not None and length > self.max_bytes:
            response.release()
            raise errors.PayloadTooLarge("the url's file is larger than allowed")
        try:
            _coding(response)
        except errors.StowageError:
            response.release()
            raise
        return response

    async def _body(
        self, response: aiohttp.ClientResponse, release: Callable[[], None], coding: str
    ) -> AsyncGenerator[bytes, None]:
        sent = paced(response.content.iter_chunked(256 * 1024), *self._pace)
        try:
            async for chunk in codings.decoded(sent, coding, self.max_bytes):  # the cap too
                yield chunk
        except TimeoutError as exc:
            raise errors.UpstreamTimeout("the url source stalled") from exc
        except aiohttp.ClientError as exc:
            raise errors.UpstreamError("the url source broke off") from exc
        finally:
            release()


def _same_address(url: URL, other: str) -> bool:
    """Whether ``other`` (as a fetch was asked for, or as it answered) names ``url``."""
    try:
        return url == URL(with_blanks_escaped(other))
    except (ValueError, TypeError):
        return False


def _releaser(response: aiohttp.ClientResponse, free: Callable[[], None]) -> Callable[[], None]:
    """Frees the connection and the slot, once (a body may both end and be closed)."""
    done = False

    def release() -> None:
        nonlocal done
        if not done:
            done = True
            response.release()
            free()

    return release


class _Body(AsyncIterator[bytes]):
    """The body's chunks. Unlike a bare async generator, closing it before the first
    read still runs the cleanup, so the slot and the connection are never leaked."""

    def __init__(self, chunks: AsyncGenerator[bytes, None], done: Callable[[], None]) -> None:
        self._chunks = chunks
        self._done = done

    def __aiter__(self) -> _Body:
        return self

    async def __anext__(self) -> bytes:
        return await anext(self._chunks)

    async def aclose(self) -> None:
        try:
            await self._chunks.aclose()
        finally:
            self._done()


def _coding(response: aiohttp.ClientResponse) -> str:
    """The body's coding, undone as it is read (a 304 has no body to undo)."""
    if response.status == 304:
        return "identity"
    return codings.coding_of(response.headers.get("Content-Encoding"))


def _joined(response: aiohttp.ClientResponse, name: str) -> str | None:
    """Every line of a list header, as one (``Cache-Control: public`` then ``no-store``)."""
    values = response.headers.getall(name, [])
    return ", ".join(values) if values else None
