"""Varnish as a cache target (``base.CacheTarget``): keep-alive connections to one cache's
admin listener, for ``PURGE`` and nothing else.

A purge is a 60-byte request and a 200 with a short body, sent while a write waits. A
general HTTP client costs more Python than the exchange itself (aiohttp: about 0.15 ms
a purge against 0.03 ms here, measured against the shipped VCL on loopback), and every
microsecond of CPU is time in which a loaded machine can preempt the write. So: raw
HTTP/1.1 on connections kept open between purges, one opened ahead of the first write
(``warm``), several when purges overlap (a write's and an earlier write's echo).

Varnish closes a connection idle for ``timeout_idle`` (5 s): such a connection is seen
closed when taken and dropped, and a request that finds its reused connection closed
before any answer is sent once more on a new one (a purge is idempotent).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Sequence
from urllib.parse import urlsplit

TAG_REQUEST_HEADER = "xkey-purge"
#: Idle connections kept per cache; more only while purges overlap.
MAX_IDLE = 4
MAX_HEAD = 16 * 1024

Conn = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class CacheLink:
    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"edge_cache_urls: not an http(s) URL: {url!r}")
        self.url = url
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.tls = ssl.create_default_context() if parts.scheme == "https" else None
        host_header = parts.netloc.rpartition("@")[2]
        target = parts.path.rstrip("/") + "/"
        self._head = f"PURGE {target} HTTP/1.1\r\nHost: {host_header}\r\n".encode()
        self._idle: list[Conn] = []
        self._warming: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        return self.url

    async def purge(self, tags: Sequence[str], timeout: float) -> str | None:
        """Never raises: returns why the cache did not acknowledge, or None."""
        request = self._head + f"{TAG_REQUEST_HEADER}: {' '.join(tags)}\r\n\r\n".encode()
        try:
            async with asyncio.timeout(timeout):
                status = await self._exchange(request)
        except TimeoutError:
            return f"no answer within {timeout:g} s"
        except (OSError, EOFError, ValueError) as exc:
            return f"could not reach the cache: {type(exc).__name__}"
        return None if status == 200 else f"the cache answered {status}"

    def warm(self) -> None:
        """Opens a connection in the background, so the first purge does not wait for it."""
        if self._warming is None or self._warming.done():
            self._warming = asyncio.create_task(self._warm())

    async def _warm(self) -> None:
        with contextlib.suppress(OSError, TimeoutError):
            async with asyncio.timeout(5):
                self._release(await self._connect())

    async def _exchange(self, request: bytes) -> int:
        conn = self._take()
        if conn is not None:
            try:
                return await self._send(conn, request)
            except (ConnectionError, EOFError):
                pass  # closed by the cache while idle: once more, on a new connection
        return await self._send(await self._connect(), request)

    async def _send(self, conn: Conn, request: bytes) -> int:
        reader, writer = conn
        try:
            writer.write(request)
            status, keep = await _read_response(reader)
        except BaseException:
            writer.close()
            raise
        if keep:
            self._release(conn)
        else:
            writer.close()
        return status

    def _take(self) -> Conn | None:
        while self._idle:
            reader, writer = self._idle.pop()
            if not reader.at_eof() and not writer.is_closing():
                return reader, writer
            writer.close()
        return None

    def _release(self, conn: Conn) -> None:
        if len(self._idle) < MAX_IDLE:
            self._idle.append(conn)
        else:
            conn[1].close()

    async def _connect(self) -> Conn:
        return await asyncio.open_connection(
            self.host, self.port, ssl=self.tls, server_hostname=self.host if self.tls else None
        )

    async def close(self) -> None:
        if self._warming is not None:
            self._warming.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._warming
        idle, self._idle = self._idle, []
        for _, writer in idle:
            writer.close()
        for _, writer in idle:
            with contextlib.suppress(OSError):
                await writer.wait_closed()


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bool]:
    """Reads one response; returns its status and whether the connection may be reused."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        raise EOFError("the cache closed the connection") from exc
    except asyncio.LimitOverrunError as exc:
        raise ValueError("response head too long") from exc
    lines = head.decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    if not version.startswith("HTTP/1.") or len(head) > MAX_HEAD:
        raise ValueError("not an HTTP/1.x response")
    status = int(rest[:3])
    fields = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip().lower()
    keep = fields.get("connection") != "close" and version == "HTTP/1.1"
    if "chunked" in fields.get("transfer-encoding", ""):
        await _skip_chunked(reader)
    elif "content-length" in fields:
        await reader.readexactly(int(fields["content-length"]))
    else:
        keep = False  # the body ends when the cache closes: not worth reading
    return status, keep


async def _skip_chunked(reader: asyncio.StreamReader) -> None:
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
        await reader.readexactly(size + 2)
        if size == 0:
            return
