"""Connections that hold a server slot without sending a request: idle after connecting,
headers a byte at a time (slowloris), idle keep-alive. All are closed after
``idle_timeout``; a request being answered, however slow the client reads, is not."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from tests.reliability.checks import TOTALS, fault
from tests.reliability.serve import Serve

IDLE = 1.0


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Serve]:
    server = Serve(tmp_path / "data", env={"STOWAGE_IDLE_TIMEOUT": str(IDLE)})
    try:
        yield server
    finally:
        server.stop_quietly()


async def _closed_after(reader: asyncio.StreamReader) -> tuple[bytes, float]:
    """What the server sent before closing, and when it closed."""
    began = time.monotonic()
    data = await asyncio.wait_for(reader.read(), 10 * IDLE)
    return data, time.monotonic() - began


async def test_a_connection_that_sends_nothing_is_closed(serve: Serve) -> None:
    serve.start()
    reader, writer = await asyncio.open_connection("127.0.0.1", serve.port)
    data, waited = await _closed_after(reader)
    writer.close()
    TOTALS.inputs_tried += 1
    fault()
    assert data == b"" and waited < 3 * IDLE


async def test_headers_sent_a_byte_at_a_time_are_cut_off(serve: Serve) -> None:
    serve.start()
    reader, writer = await asyncio.open_connection("127.0.0.1", serve.port)
    request = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Padding: " + b"a" * 200 + b"\r\n\r\n"
    began = time.monotonic()
    sent = 0
    with pytest.raises(ConnectionError):
        for byte in request:  # 0.1 s a byte: the whole head would take 23 s
            writer.write(bytes([byte]))
            await writer.drain()
            sent += 1
            await asyncio.sleep(0.1)
            if reader.at_eof() or time.monotonic() - began > 10 * IDLE:
                raise ConnectionResetError("closed by the server")
    writer.close()
    TOTALS.inputs_tried += 1
    fault()
    assert sent < len(request) and time.monotonic() - began < 4 * IDLE
    assert await reader.read() == b""  # no answer: the request never began


async def test_an_idle_keep_alive_connection_is_closed(serve: Serve) -> None:
    serve.start()
    reader, writer = await asyncio.open_connection("127.0.0.1", serve.port)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    head = await reader.readuntil(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    length = int(next(line for line in head.split(b"\r\n") if b"Content-Length" in line).split()[1])
    await reader.readexactly(length)
    data, waited = await _closed_after(reader)
    writer.close()
    TOTALS.inputs_tried += 1
    assert data == b"" and waited < 3 * IDLE


async def test_a_slow_reader_still_gets_the_whole_file(serve: Serve) -> None:
    """A download that takes several idle timeouts to read is not cut."""
    key, _secret = serve.create_app()
    serve.start()
    data = bytes(range(256)) * 32 * 1024  # 8 MiB: more than the socket buffers hold
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{serve.api}/api/store/S3?key={key}", data=data) as resp:
            handle = (await resp.json())["handle"]
        received = bytearray()
        began = time.monotonic()
        async with http.get(f"{serve.api}/api/file/{handle}") as resp:
            async for chunk in resp.content.iter_chunked(512 * 1024):
                received += chunk
                await asyncio.sleep(0.25)
    assert time.monotonic() - began > 3 * IDLE
    assert bytes(received) == data
