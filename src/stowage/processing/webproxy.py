"""A forward proxy of our own, through which a screenshot's browser makes every request:
each one passes the URL guard of ``core.fetch`` (the one user-given URLs pass), so a
page, its subresources, its redirects and its scripts reach no loopback, private,
link-local or metadata address.

The proxy resolves every name itself with the guarded resolver and connects to the
address it checked (no DNS rebinding between check and use); the browser resolves
nothing (``screenshots.py``: ``--host-resolver-rules``) and may not bypass the proxy,
loopback included (``--proxy-bypass-list=<-loopback>``). Plain HTTP requests are sent
on with ``Connection: close`` (one request per connection, so a second request can never
ride a connection checked for another host); HTTPS and WebSockets are ``CONNECT``
tunnels to a checked address. A refused request is answered ``403`` with the header
``X-Stowage-Blocked``, and recorded in ``blocked``.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from dataclasses import dataclass, field

from yarl import URL

from stowage import errors
from stowage.core.urlguard import GuardedResolver, check_url

BLOCKED_HEADER = "X-Stowage-Blocked"
_HEAD_LIMIT = 64 * 1024
_CHUNK = 64 * 1024
_REFUSED = (
    f"HTTP/1.1 403 Forbidden\r\n{BLOCKED_HEADER}: url-guard\r\nContent-Type: text/plain\r\n"
    "Content-Length: 0\r\nConnection: close\r\n\r\n"
).encode()
_BAD = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
UNREACHABLE_HEADER = "X-Stowage-Unreachable"
_UNREACHABLE = (
    f"HTTP/1.1 502 Bad Gateway\r\n{UNREACHABLE_HEADER}: 1\r\nContent-Length: 0\r\n"
    "Connection: close\r\n\r\n"
).encode()
_HOP_HEADERS = {"connection", "keep-alive", "proxy-connection", "proxy-authorization", "te"}


@dataclass
class GuardProxy:
    """One screenshot's proxy on 127.0.0.1 (``port`` once started)."""

    allow_private: bool
    max_bytes: int  # every byte relayed, both ways, for the whole page
    connect_timeout: float = 10.0
    port: int = 0
    blocked: list[str] = field(default_factory=list)  # the URLs refused, as asked
    refused: set[tuple[str, int]] = field(default_factory=set)  # their hosts and ports
    relayed: int = 0
    sock: socket.socket | None = None  # a listening socket to serve on (else a new one)
    _server: asyncio.Server | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    async def __aenter__(self) -> GuardProxy:
        self._resolver = GuardedResolver(self.allow_private)
        if self.sock is not None:  # in the browser's network namespace (browser.py)
            self._server = await asyncio.start_server(
                self._accepted, sock=self.sock, limit=_HEAD_LIMIT
            )
        else:
            self._server = await asyncio.start_server(
                self._accepted, "127.0.0.1", 0, limit=_HEAD_LIMIT
            )
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()
        await self._resolver.close()

    async def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:  # a connection's task, cancelled when the screenshot ends
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        try:
            await self._serve(reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3:
            writer.write(_BAD)
            return
        method, target, _ = parts
        url = f"https://{target}/" if method == "CONNECT" else target
        try:
            parsed = check_url(url, self.allow_private)
            assert parsed.host is not None
            port = parsed.port or (443 if parsed.scheme == "https" else 80)
            found = await self._resolver.resolve(parsed.host, port)
        except (errors.UrlForbidden, errors.InvalidUrl):
            self.blocked.append(url[:200])
            self.refused.add(_place(url))
            writer.write(_REFUSED)
            return
        except OSError:  # the name does not resolve
            writer.write(_UNREACHABLE)
            return
        try:
            async with asyncio.timeout(self.connect_timeout):
                upstream = await asyncio.open_connection(found[0]["host"], port)
        except (OSError, TimeoutError):
            writer.write(_UNREACHABLE)
            return
        if method == "CONNECT":
            writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        else:
            upstream[1].write(_origin_form(method, parsed, lines[1:]))
        await self._relay(reader, writer, *upstream)

    async def _relay(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        up_reader: asyncio.StreamReader,
        up_writer: asyncio.StreamWriter,
    ) -> None:
        try:
            await asyncio.gather(self._pump(reader, up_writer), self._pump(up_reader, writer))
        finally:
            up_writer.close()

    async def _pump(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        while chunk := await source.read(_CHUNK):
            self.relayed += len(chunk)
            if self.relayed > self.max_bytes:
                raise OSError("the page loaded more bytes than allowed")
            sink.write(chunk)
            await sink.drain()
        with contextlib.suppress(OSError):
            if sink.can_write_eof():
                sink.write_eof()


def _place(url: str) -> tuple[str, int]:
    """A URL's host and port, as ``refused`` keeps them (no port: the scheme's)."""
    try:
        parsed = URL(url)
    except (ValueError, TypeError):
        return ("", 0)
    return ((parsed.host or "").lower(), parsed.port or 0)


def refused_url(proxy: GuardProxy, url: str) -> bool:
    """Whether the proxy refused a request to ``url``'s host and port."""
    return _place(url) in proxy.refused


def _origin_form(method: str, url: URL, headers: list[str]) -> bytes:
    """The request as the origin takes it: its path, no hop-by-hop header, one request."""
    kept = [h for h in headers if h and h.split(":", 1)[0].strip().lower() not in _HOP_HEADERS]
    if not any(h.lower().startswith("host:") for h in kept):
        kept.insert(0, f"Host: {url.raw_authority}")
    target = url.raw_path_qs or "/"
    lines = [f"{method} {target} HTTP/1.1", *kept, "Connection: close", "", ""]
    return "\r\n".join(lines).encode("latin-1")
