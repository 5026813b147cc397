"""A small TCP fault proxy on 127.0.0.1, in the style of tusd's end-to-end tests.

It sits between a client and a real server and, per connection, forwards bytes
faithfully until its fault fires:

- ``reset``: after ``after`` bytes in ``direction``, both sides get a TCP RST;
- ``stall``: after ``after`` bytes in ``direction``, nothing more is forwarded
  (the connection stays open);
- ``trickle``: after ``after`` bytes in ``direction``, bytes are forwarded one at a time,
  ``interval`` apart;
- ``down``: connections are accepted and reset at once (a backend that is down);
- ``pass``: no fault.

``direction`` is ``up`` (client to server) or ``down`` (server to client).
``faults`` counts faults injected, for the reliability totals.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from dataclasses import dataclass, field

BUFFER = 64 * 1024


@dataclass
class FaultProxy:
    target_port: int
    mode: str = "pass"
    after: int = 0
    direction: str = "up"
    interval: float = 1.0
    port: int = 0
    faults: int = 0
    connections: int = 0
    _server: asyncio.Server | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> FaultProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        await self.release()

    async def release(self) -> None:
        """Resets every open connection, stalled ones included (the server coming back
        drops what it held), and forwards faithfully from now on."""
        self.mode = "pass"
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def __aenter__(self) -> FaultProxy:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._serve(reader, writer)
        except (ConnectionError, asyncio.CancelledError, OSError):
            pass
        finally:
            self._tasks.discard(task)
            _reset(writer)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.mode == "down":
            self.faults += 1
            return
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        try:
            pumps = [
                asyncio.ensure_future(self._pump(reader, up_writer, "up")),
                asyncio.ensure_future(self._pump(up_reader, writer, "down")),
            ]
            done, pending = await asyncio.wait(pumps, return_when=asyncio.FIRST_EXCEPTION)
            for task in done:
                if task.exception() is not None:
                    for other in pending:
                        other.cancel()
                    return
            await asyncio.gather(*pending, return_exceptions=True)
        finally:
            _reset(up_writer)

    async def _pump(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, direction: str
    ) -> None:
        faulty = direction == self.direction and self.mode != "pass"
        sent = 0
        while data := await reader.read(self._size(faulty, sent)):
            if faulty and self.mode in ("reset", "stall") and sent + len(data) > self.after:
                writer.write(data[: self.after - sent])
                await writer.drain()
                self.faults += 1
                if self.mode == "reset":
                    raise ConnectionResetError("fault proxy reset")
                await asyncio.Event().wait()  # stall: hold the connection, forward nothing
            writer.write(data)
            await writer.drain()
            sent += len(data)
            if faulty and self.mode == "trickle" and sent > self.after:
                self.faults += sent == self.after + 1
                await asyncio.sleep(self.interval)
        with contextlib.suppress(OSError):
            if writer.can_write_eof():
                writer.write_eof()

    def _size(self, faulty: bool, sent: int) -> int:
        """How much to read next: one byte at a time once a trickle has begun."""
        if faulty and self.mode == "trickle":
            return 1 if sent >= self.after else self.after - sent
        return BUFFER


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with SO_LINGER 0: the peer sees a TCP RST, as after a crash or a cut cable."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()
