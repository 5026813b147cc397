"""The screenshots' guard proxy on its own: CONNECT and plain requests to internal
addresses are refused with the blocked header and recorded, and reach no listener;
allowed ones are relayed to the checked address, one request per connection."""

from __future__ import annotations

import asyncio

import pytest

from stowage.processing.webproxy import BLOCKED_HEADER, GuardProxy


async def exchange(port: int, request: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(65536), 5)
    writer.close()
    return answer


async def listening() -> tuple[asyncio.Server, list[bytes]]:
    heard: list[bytes] = []

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        heard.append(await reader.readuntil(b"\r\n\r\n"))
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        await writer.drain()
        writer.close()

    return await asyncio.start_server(on_connect, "127.0.0.1", 0), heard


@pytest.mark.parametrize(
    "request_of",
    [
        "CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n",
        "CONNECT localhost:{port} HTTP/1.1\r\n\r\n",
        "GET http://127.0.0.1:{port}/x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        "GET http://0x7f.1:{port}/x HTTP/1.1\r\n\r\n",
        "GET http://169.254.169.254/latest HTTP/1.1\r\n\r\n",
        "GET http://user:pw@example.invalid/ HTTP/1.1\r\n\r\n",
        "GET file:///etc/passwd HTTP/1.1\r\n\r\n",
    ],
)
async def test_internal_targets_are_refused_and_reach_nothing(request_of: str) -> None:
    server, heard = await listening()
    port = server.sockets[0].getsockname()[1]
    async with GuardProxy(allow_private=False, max_bytes=1 << 20) as proxy:
        answer = await exchange(proxy.port, request_of.format(port=port).encode())
        assert answer.startswith(b"HTTP/1.1 403") and BLOCKED_HEADER.encode() in answer
        assert len(proxy.blocked) == 1
    server.close()
    assert heard == []


async def test_an_allowed_request_is_relayed_in_origin_form_with_one_request() -> None:
    server, heard = await listening()
    port = server.sockets[0].getsockname()[1]
    async with GuardProxy(allow_private=True, max_bytes=1 << 20) as proxy:
        request = (
            f"GET http://127.0.0.1:{port}/a?b=1 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            "Proxy-Connection: keep-alive\r\nConnection: keep-alive\r\n\r\n"
        )
        answer = await exchange(proxy.port, request.encode())
        assert answer.endswith(b"\r\n\r\nok")
        assert proxy.blocked == []
    server.close()
    head = heard[0].decode()
    assert head.startswith("GET /a?b=1 HTTP/1.1\r\n")
    assert "Connection: close" in head and "keep-alive" not in head.lower()


async def test_a_connect_tunnel_relays_both_ways() -> None:
    server, heard = await listening()
    port = server.sockets[0].getsockname()[1]
    async with GuardProxy(allow_private=True, max_bytes=1 << 20) as proxy:
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        writer.write(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
        assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200")
        writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert (await asyncio.wait_for(reader.read(), 5)).endswith(b"ok")
        writer.close()
    server.close()
    assert heard == [b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"]


async def test_the_byte_budget_ends_the_relay() -> None:
    server, _ = await listening()
    port = server.sockets[0].getsockname()[1]
    async with GuardProxy(allow_private=True, max_bytes=10) as proxy:
        request = f"GET http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: h\r\n\r\n".encode()
        answer = await exchange(proxy.port, request)
        assert not answer.endswith(b"ok")
    server.close()
