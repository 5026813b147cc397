"""Origins on loopback for URL sources: ``serving`` one file, and ``image_site``, a
300x150 PNG."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

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


@pytest.fixture
async def image_site() -> AsyncIterator[str]:
    async with serving("/pic.png", picture(300, 150, ".png"), "image/png") as url:
        yield url
