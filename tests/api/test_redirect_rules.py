"""A policy's ``url`` rule holds for every address a URL source redirects to, not only
the one sent: ``/allowed/go`` answering 302 to ``/other/pic.png`` was fetched and
stored or transformed under a policy for ``/allowed/.*``. Every way a URL is fetched for
a client: transformations of a URL, ``/<key>/store/<URL>``, store and overwrite by URL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.api.harness import Harness
from tests.api.test_transform import picture
from tests.api.test_transform_rules import code_of

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")
PICTURE = picture(40, 20, ".png")
# A chain of one to three redirects; each hop stays under /allowed/ or leaves for /other/.
HOPS = st.lists(st.sampled_from(["allowed", "other"]), min_size=1, max_size=3)
WAYS = st.sampled_from(["transform", "process_store", "api_store", "overwrite"])
GENERATED = settings(
    max_examples=24, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@asynccontextmanager
async def redirecting_site() -> AsyncIterator[tuple[str, list[str]]]:
    """``/<place>/hop/<n>/<rest...>`` redirects to ``/<rest...>``; ``/<place>/pic.png`` is
    the picture. Yields the site's root and the paths it was asked for."""
    asked: list[str] = []

    async def answer(request: web.Request) -> web.StreamResponse:
        asked.append(request.path)
        parts = request.path.strip("/").split("/")
        if len(parts) > 2 and parts[1] == "hop":
            raise web.HTTPFound("/" + "/".join(parts[3:]))
        return web.Response(body=PICTURE, content_type="image/png")

    app = web.Application()
    app.router.add_get("/{tail:.*}", answer)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        yield str(server.make_url("")).rstrip("/"), asked
    finally:
        await server.close()


def chain(places: list[str]) -> str:
    """The path that passes through ``places`` (the first is where it starts) by one
    redirect each, ending at the last place's picture."""
    *hops, last = places
    return "".join(f"/{place}/hop/{n}" for n, place in enumerate(hops)) + f"/{last}/pic.png"


@given(hops=HOPS, way=WAYS)
@GENERATED
async def test_every_address_a_redirect_leads_to_is_held_to_the_url_rule(
    harness: Harness, hops: list[str], way: str
) -> None:
    app = harness.secure_app
    async with redirecting_site() as (root, asked):
        root_rule = root.replace(".", "\\.")
        places = ["allowed", *hops]
        url = root + chain(places)
        calls = ["convert", "store", "write", "writeUrl", "read"]
        policy = harness.policy(app, call=calls, url=f"{root_rule}/allowed/.*")
        status, code = await _fetch(harness, way, url, policy)
        if "other" in places:
            assert (status, code) == (403, "POLICY_DENIED"), (way, places)
            assert not any(path.startswith("/other/") for path in asked), asked
        else:
            assert status == 200, (way, places, code)
            assert asked[-1] == "/allowed/pic.png"


async def _fetch(harness: Harness, way: str, url: str, policy: dict[str, str]) -> tuple[int, Any]:
    app = harness.secure_app
    if way == "transform":
        resp = await harness.cdn.get(f"/{app.api_key}/resize=w:10/{url}", params=policy)
    elif way == "process_store":
        resp = await harness.api.get(f"/process/{app.api_key}/store/{url}", params=policy)
    elif way == "api_store":
        params = {"key": app.api_key, **policy}
        resp = await harness.api.post("/api/store/S3", params=params, data={"url": url})
    else:
        handle = (await harness.store(b"old", app=app))["url"].rsplit("/", 1)[-1]
        params = {"key": app.api_key, **policy}
        resp = await harness.api.post(f"/api/file/{handle}", params=params, data={"url": url})
    return resp.status, None if resp.status == 200 else await code_of(resp)
