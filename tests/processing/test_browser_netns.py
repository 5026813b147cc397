"""The screenshot browser's network namespace (``browser.py``): what runs there reaches
the proxy's socket and nothing of the host, not even its loopback."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from stowage.processing import browser

PROBE = """
import socket, sys
proxy = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2)
proxy.sendall(b"via the proxy")
proxy.close()
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[2])), timeout=1).sendall(b"direct")
except OSError:
    pass
"""


async def test_only_the_proxy_socket_is_reachable(tmp_path: Path) -> None:
    seen: list[bytes] = []

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await reader.read(100))
        writer.close()

    host = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    port = host.sockets[0].getsockname()[1]
    command = [sys.executable, "-c", PROBE, "{port}", str(port)]
    page, listening = await browser.Browser.launch(command, tmp_path)
    try:
        loop = asyncio.get_running_loop()
        listening.setblocking(False)
        conn, _ = await asyncio.wait_for(loop.sock_accept(listening), 5)
        assert await asyncio.wait_for(loop.sock_recv(conn, 100), 5) == b"via the proxy"
        conn.close()
        # the probe tried the host's listener, failed, and ended normally
        assert await asyncio.wait_for(page._proc.wait(), 5) == 0
    finally:
        await page.close()
        listening.close()
        host.close()
    assert seen == []
