"""An origin on loopback for URL sources: ``image_site`` serves a 300x150 PNG."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from tests.api.test_transform import picture


@pytest.fixture
async def image_site() -> AsyncIterator[str]:
    async def image(request: web.Request) -> web.Response:
        return web.Response(body=picture(300, 150, ".png"), content_type="image/png")

    app = web.Application()
    app.router.add_get("/pic.png", image)
    server = TestServer(app)
    await server.start_server()
    yield str(server.make_url("/pic.png"))
    await server.close()
