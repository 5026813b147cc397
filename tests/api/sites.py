"""Origins on loopback for URL sources: ``serving`` one file, ``image_site``, a
300x150 PNG, and ``origin_site``, one told what to answer that records what it is asked."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from tests.api.test_transform import picture


@asynccontextmanager
async def serving(path: str, body: bytes, content_type: str) -> AsyncIterator[str]:
    """The URL of ``body`` at ``path`` on a server of its own, for the block."""

    async def answer(request: web.Request) -> web.Response:
        return web.Response(body=body, content_type=content_type)

    app = web.Application()
    app.router.add_get(path, answer)
    server = TestServer(app)
    await server.start_server()
    try:
        yield str(server.make_url(path))
    finally:
        await server.close()


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@asynccontextmanager
async def served(answer: Handler, route: str) -> AsyncIterator[str]:
    """``answer`` to the GETs of ``route`` on a loopback server of its own: its root URL
    (no trailing slash), for the block."""
    async with served_routes({route: answer}) as root:
        yield root


@asynccontextmanager
async def served_routes(answers: dict[str, Handler]) -> AsyncIterator[str]:
    """``served`` with a handler for each of several routes."""
    app = web.Application()
    for route, answer in answers.items():
        app.router.add_get(route, answer)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        yield str(server.make_url("")).rstrip("/")
    finally:
        await server.close()


@pytest.fixture
async def image_site() -> AsyncIterator[str]:
    async with serving("/pic.png", picture(300, 150, ".png"), "image/png") as url:
        yield url


@dataclass
class Origin:
    """A loopback origin that answers as each test tells it and records what it was
    asked: ``/wait/<ms>/<status>/<name>`` waits, then answers ``status`` with a body
    naming its path (``body_of``); any other path answers ``picture`` with ``headers``."""

    root: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    picture: bytes = b""
    #: each request's raw path (as sent, escapes kept) and headers
    asked: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    running: int = 0
    most_running: int = 0  # the most requests in flight at once

    def body_of(self, path: str) -> bytes:
        return b"file at " + path.encode()


@pytest.fixture
async def origin_site() -> AsyncIterator[Origin]:
    found = Origin(picture=picture(40, 30, ".png"))

    async def answer(request: web.Request) -> web.StreamResponse:
        found.asked.append((request.raw_path, dict(request.headers)))
        found.running += 1
        found.most_running = max(found.most_running, found.running)
        try:
            parts = request.path.split("/")
            if len(parts) == 5 and parts[1] == "wait":
                await asyncio.sleep(int(parts[2]) / 1000)
                status = int(parts[3])
                return web.Response(status=status, body=found.body_of(request.path))
            return web.Response(body=found.picture, content_type="image/png", headers=found.headers)
        finally:
            found.running -= 1

    async with served(answer, r"/{tail:[\s\S]*}") as root:  # a decoded line break too
        found.root = root
        yield found


@dataclass
class RawOrigin:
    """An origin that sends ``head`` byte for byte (what aiohttp's server refuses to:
    control characters, bytes that are no UTF-8) before ``body``, then closes."""

    root: str = ""
    head: bytes = b""
    body: bytes = b""
    asked: list[bytes] = field(default_factory=list)  # each request's head


@pytest.fixture
async def raw_origin() -> AsyncIterator[RawOrigin]:
    found = RawOrigin(body=picture(40, 30, ".png"))

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            found.asked.append(await reader.readuntil(b"\r\n\r\n"))
            length = b"Content-Length: %d\r\n" % len(found.body)
            writer.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\n" + length + found.head)
            writer.write(b"\r\n" + found.body)
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    found.root = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        yield found
    finally:
        server.close()
        await server.wait_closed()
