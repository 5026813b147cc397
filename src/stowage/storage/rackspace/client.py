"""Speaking Swift over HTTP: one session, requests signed with the current login (renewed
before it expires, and once more when Swift answers 401), listings page by page, and the
request bodies that stream a source in pieces."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from urllib.parse import quote

import aiohttp
from yarl import URL

from stowage import errors
from stowage.storage.base import Chunks
from stowage.storage.rackspace.auth import Login, authenticate
from stowage.storage.rackspace.replies import expect
from stowage.storage.settings import RackspaceSettings

PIECE = 1024 * 1024
LISTING_PAGE = 1000


class SwiftClient:
    def __init__(self, settings: RackspaceSettings) -> None:
        self.settings = settings
        self._http: aiohttp.ClientSession | None = None
        self._login: Login | None = None
        self._login_lock = asyncio.Lock()

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None

    def session(self) -> aiohttp.ClientSession:
        if self._http is None or self._http.closed:
            timeout = aiohttp.ClientTimeout(
                total=None,
                sock_connect=self.settings.connect_timeout,
                sock_read=self.settings.read_timeout,
            )
            self._http = aiohttp.ClientSession(timeout=timeout, auto_decompress=False)
        return self._http

    @asynccontextmanager
    async def request(
        self,
        method: str,
        path: str,
        headers: Mapping[str, str] | None = None,
        data: bytes | SegmentBody | None = None,
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        for attempt in (1, 2):
            login = await self._current_login()
            resp = await self._send(login, method, path, headers, data)
            if resp.status == 401 and attempt == 1 and not _consumed(data):
                resp.release()
                self._forget(login)
                continue
            try:
                yield resp
            finally:
                resp.release()
            return

    async def _send(
        self,
        login: Login,
        method: str,
        path: str,
        headers: Mapping[str, str] | None,
        data: bytes | SegmentBody | None,
    ) -> aiohttp.ClientResponse:
        url = URL(login.storage_url + path, encoded=True)
        all_headers = {"X-Auth-Token": login.token, **(headers or {})}
        streamed = isinstance(data, SegmentBody)
        # With 100-continue a 401 (or 404) comes back before any body byte is sent,
        # so the unconsumed stream can be sent again after a new login.
        body = data.chunks() if isinstance(data, SegmentBody) else data
        try:
            return await self.session().request(
                method, url, headers=all_headers, data=body, expect100=streamed
            )
        except (aiohttp.ClientError, TimeoutError) as exc:
            if isinstance(data, SegmentBody) and data.source.error is not None:
                raise data.source.error from None
            raise errors.StorageUnavailable(f"rackspace: {type(exc).__name__}") from exc

    async def _current_login(self) -> Login:
        async with self._login_lock:
            if self._login is None or time.monotonic() >= self._login.renew_at:
                self._login = await authenticate(self.session(), self.settings)
            return self._login

    def _forget(self, login: Login) -> None:
        if self._login is login:
            self._login = None

    async def names(self, path: str, prefix: str = "") -> AsyncIterator[str]:
        """Every name in an account (``path`` "") or container listing, page by page."""
        marker = ""
        while True:
            query = f"?format=json&limit={LISTING_PAGE}&marker={quote(marker, safe='')}"
            if prefix:
                query += f"&prefix={quote(prefix, safe='')}"
            async with self.request("GET", path + query) as resp:
                expect(resp, 200, 204)
                page = await resp.json(content_type=None) if resp.status == 200 else []
            for item in page:
                yield str(item["name"])
            if len(page) < LISTING_PAGE:
                return
            marker = str(page[-1]["name"])


class Source:
    """The caller's chunks, re-cut to size; remembers an error the caller's iterator raised."""

    def __init__(self, chunks: Chunks) -> None:
        self._it = chunks.__aiter__()
        self._pending = memoryview(b"")
        self._eof = False
        self.error: BaseException | None = None

    async def at_eof(self) -> bool:
        while not self._pending and not self._eof:
            try:
                chunk = await self._it.__anext__()
            except StopAsyncIteration:
                self._eof = True
            except BaseException as exc:
                self.error = exc
                raise
            else:
                self._pending = memoryview(chunk)
        return not self._pending

    async def take(self, limit: int) -> bytes:
        """Up to ``limit`` bytes (at most one piece); b"" at the end."""
        if await self.at_eof():
            return b""
        n = min(limit, PIECE, len(self._pending))
        piece, self._pending = self._pending[:n], self._pending[n:]
        return bytes(piece)

    async def read_head(self, limit: int) -> bytes | None:
        """The whole source if it is at most ``limit`` bytes; else None, nothing consumed."""
        head = bytearray()
        while len(head) <= limit and not await self.at_eof():
            head += await self.take(limit + 1 - len(head))
        if len(head) <= limit:
            return bytes(head)
        self._pending = memoryview(bytes(head) + bytes(self._pending))
        return None


class SegmentBody:
    """At most ``limit`` bytes of a source, streamed once."""

    def __init__(self, source: Source, limit: int) -> None:
        self.source = source
        self.limit = limit
        self.sent = 0
        self.started = False

    async def chunks(self) -> AsyncIterator[bytes]:
        self.started = True
        while self.sent < self.limit:
            piece = await self.source.take(self.limit - self.sent)
            if not piece:
                return
            self.sent += len(piece)
            yield piece


def ambiguous(exc: BaseException) -> bool:
    """True when a request may have reached the store although it failed here."""
    if isinstance(exc, asyncio.CancelledError):
        return True
    cause = exc.__cause__
    return isinstance(exc, errors.StorageUnavailable) and isinstance(
        cause, aiohttp.ClientError | TimeoutError
    )


def _consumed(data: bytes | SegmentBody | None) -> bool:
    return isinstance(data, SegmentBody) and data.started
