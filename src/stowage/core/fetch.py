"""Fetching a file from a user-given URL without letting it reach inside the network.

Every address is checked where it is actually used: the resolver hands the
connector only addresses that passed the guard, so the IP connected to is the
IP checked (no DNS rebinding window). Redirects are followed by hand, each hop
checked again. Only http and https.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass

import aiohttp
from yarl import URL

from stowage import __version__, errors
from stowage.core import codings, dispositions
from stowage.core.fetchphases import Phases
from stowage.core.fetchslots import FetchSlots, Owner, paced
from stowage.core.urlguard import GuardedResolver, check_url, with_blanks_escaped

#: Some origins refuse aiohttp's own (``fetch_user_agent``).
DEFAULT_AGENT = f"Stowage/{__version__} (+url-fetch)"
_FILE_STATUSES = (200, 203)  # 203: a proxy's copy of the 200


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
