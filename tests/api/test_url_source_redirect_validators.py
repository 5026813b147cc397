"""A kept URL source's validators go only to the address that sent them (generated
inputs, seed 9590). The copy of ``/latest`` (a redirect) kept the ``Last-Modified`` of
the file it led to; once ``/latest`` led to another, older file, that date was sent to
it, which answered 304, and the first file's copy was answered for the second, for as
long as the redirect stayed (a rollback to an earlier release is such a file)."""

from __future__ import annotations

import email.utils
import random
import time

from aiohttp import web

from tests.api.harness import Harness
from tests.api.sites import served
from tests.api.test_transform import decoded, picture


async def test_a_redirect_to_another_file_is_not_judged_by_the_first_files_date(
    harness: Harness,
) -> None:
    rnd = random.Random(9590)
    now = time.time()
    # name: (width, Last-Modified); the older file is the one the redirect turns to
    files = {
        "new.png": (rnd.randint(41, 80), now - 60),
        "old.png": (rnd.randint(10, 40), now - 9000),
    }
    state = {"to": "new.png"}
    asked: list[tuple[str, str | None]] = []

    async def answer(request: web.Request) -> web.StreamResponse:
        name = request.path.rsplit("/", 1)[1]
        asked.append((name, request.headers.get("If-Modified-Since")))
        if name == "latest":
            return web.Response(status=302, headers={"Location": state["to"]})
        width, modified = files[name]
        since = request.headers.get("If-Modified-Since")
        judged = email.utils.parsedate_to_datetime(since).timestamp() if since else None
        if judged is not None and judged >= int(modified):
            return web.Response(status=304)  # an origin judging the date, as http.server does
        date = email.utils.formatdate(modified, usegmt=True)
        body = picture(width, 20, ".png")
        return web.Response(body=body, content_type="image/png", headers={"Last-Modified": date})

    async with served(answer, "/{tail:.*}") as root:
        key = harness.open_app.api_key
        for target, width in (("new.png", files["new.png"][0]), ("old.png", files["old.png"][0])):
            state["to"] = target
            for _ in range(2):  # the second kept and revalidated
                resp = await harness.cdn.get(f"/{key}/flip/{root}/latest")
                assert resp.status == 200, await resp.text()
                assert decoded(await resp.read()).width == width, (target, asked)
    # the kept copy of new.png is revalidated with new.png itself, and only there
    assert [name for name, since in asked if since is not None] == ["new.png", "old.png"]
