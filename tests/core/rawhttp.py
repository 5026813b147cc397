"""An origin on 127.0.0.1 that answers with raw bytes on a schedule: what no HTTP server
library would send (interim answers then silence, headers a byte at a time)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable

#: Bytes to send, each after a pause of so many seconds.
Step = tuple[float, bytes]


class RawOrigin:
    def __init__(self, steps: Iterable[Step], *, forever: Step | None = None) -> None:
        """``steps`` once, then ``forever`` again and again (else silence until closed)."""
        self.steps = list(steps)
        self.forever = forever
        self.requests = 0
        self.port = 0
        self._server: asyncio.Server | None = None
        self._answers: set[asyncio.Task[None]] = set()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._answers.add(task)
        try:
            await reader.readuntil(b"\r\n\r\n")
            self.requests += 1
            for pause, data in self.steps:
                await asyncio.sleep(pause)
                writer.write(data)
                await writer.drain()
            while self.forever is not None:
                await asyncio.sleep(self.forever[0])
                writer.write(self.forever[1])
                await writer.drain()
            await reader.read()  # silence until the client gives up
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    def url(self, path: str = "/file") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def __aenter__(self) -> RawOrigin:
        self._server = await asyncio.start_server(self._answer, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in self._answers:
            task.cancel()
        await asyncio.gather(*self._answers, return_exceptions=True)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(2):
                await self._server.wait_closed()


@contextlib.asynccontextmanager
async def raw_origin(
    steps: Iterable[Step], forever: Step | None = None
) -> AsyncIterator[RawOrigin]:
    async with RawOrigin(steps, forever=forever) as origin:
        yield origin
