"""``/<APIKEY>/<URL>`` with no processing task (only request tasks: ``cache``,
``security``) is the URL's file as it is, as ``/<APIKEY>/<HANDLE>`` is a stored file's:
it was transformed (a JPEG re-encoded, a text file drawn as a PNG, a zip refused 415).
Generated over file kinds, request tasks and spellings of the URL; the headers are a
download's (the same type and disposition as the same bytes stored and downloaded)."""

from __future__ import annotations

import io
import random
import zipfile
from collections.abc import AsyncIterator
from urllib.parse import quote

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from yarl import URL

from tests.api.harness import Harness
from tests.api.test_transform import picture

SVG = (
    b'<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4">'
    b'<rect width="4" height="4"/></svg>'
)


def _zip(rng: random.Random) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("a.txt", rng.randbytes(rng.randint(0, 300)))
    return buffer.getvalue()


def _kinds(rng: random.Random) -> dict[str, tuple[bytes, str]]:
    """name -> (body, the type the origin declares)."""
    size = rng.randint(8, 60), rng.randint(8, 60)
    return {
        "photo.jpg": (picture(*size, ".jpg"), "image/jpeg"),
        "pic.png": (picture(*size, ".png"), "application/octet-stream"),
        "notes.txt": (rng.randbytes(rng.randint(1, 200)).hex().encode(), "text/plain"),
        "page.html": (b"<html><script>alert(1)</script></html>", "text/html"),
        "draw.svg": (SVG, "image/svg+xml"),
        "bundle.zip": (_zip(rng), "application/zip"),
        "empty.bin": (b"", "application/octet-stream"),
    }


@pytest.fixture
async def files() -> AsyncIterator[tuple[str, dict[str, tuple[bytes, str]]]]:
    kinds = _kinds(random.Random(7))

    async def answer(request: web.Request) -> web.Response:
        body, declared = kinds[request.match_info["name"]]
        return web.Response(body=body, headers={"Content-Type": declared, "ETag": '"1"'})

    app = web.Application()
    app.router.add_get("/files/{name}", answer)
    server = TestServer(app)
    await server.start_server()
    try:
        yield str(server.make_url("/files/")), kinds
    finally:
        await server.close()


def _spelled(url: str, rng: random.Random) -> str:
    return rng.choice([url, f'"{url}"', f"%22{url}%22", quote(url, safe="")])


def _kind_of(disposition: str | None) -> str:
    return (disposition or "").split(";")[0]


async def test_a_url_without_tasks_is_its_file_as_it_is(
    harness: Harness, files: tuple[str, dict[str, tuple[bytes, str]]]
) -> None:
    base, kinds = files
    rng = random.Random(2026)
    app = harness.secure_app
    handles = {}  # the same bytes stored: what their download's headers say
    for name in kinds:
        pair = harness.policy(app, call=["store"])
        resp = await harness.api.get(f"/process/{app.api_key}/store/{base}{name}", params=pair)
        assert resp.status == 200, await resp.text()
        handles[name] = (await resp.json())["handle"]
        assert (await resp.json())["size"] == len(kinds[name][0])
    for _ in range(40):
        name = rng.choice(sorted(kinds))
        body = kinds[name][0]
        rules = harness.policy(app, call=["read"], url=r"http://127\.0\.0\.1:[0-9]+/files/.*")
        security = f"security=p:{rules['policy']},s:{rules['signature']}"
        tasks = rng.sample(["cache=false", f"cache=expiry:{rng.randint(1, 999)}", security], 2)
        tasks = tasks[: rng.randint(0, 2)]
        query = {} if security in tasks else rules
        path = "/".join(["", app.api_key, *tasks, _spelled(base + name, rng)])
        resp = await harness.cdn.get(URL(path, encoded=True), params=query)
        got = await resp.read()
        assert resp.status == 200, (path, got[:300])
        assert got == body, (name, tasks)
        assert resp.headers["X-Content-Type-Options"] == "nosniff"
        assert resp.headers["Content-Security-Policy"].startswith("sandbox")
        download = await harness.cdn.get(f"/{app.api_key}/{handles[name]}", params=rules)
        assert download.status == 200 and await download.read() == body
        assert resp.headers["Content-Type"] == download.headers["Content-Type"], name
        disposition = resp.headers["Content-Disposition"]
        assert _kind_of(disposition) == _kind_of(download.headers["Content-Disposition"])
        if "cache=false" in tasks:
            assert resp.headers["Cache-Control"] == "no-store"


async def test_a_url_as_it_is_is_a_read(
    harness: Harness, files: tuple[str, dict[str, tuple[bytes, str]]]
) -> None:
    """The policy a download of a handle needs (``read``), and its ``url`` rule."""
    base, kinds = files
    app = harness.secure_app
    url = base + "notes.txt"
    allowed = r"http://127\.0\.0\.1:[0-9]+/files/notes\.txt"
    for calls, rule, status in (
        (["read"], allowed, 200),
        (["convert"], allowed, 403),
        (["read"], r"http://127\.0\.0\.1:[0-9]+/other/.*", 403),
    ):
        pair = harness.policy(app, call=calls, url=rule)
        resp = await harness.cdn.get(f"/{app.api_key}/{url}", params=pair)
        assert resp.status == status, (calls, rule, await resp.text())
    resp = await harness.cdn.get(f"/{app.api_key}/{url}")
    assert resp.status == 401
    dl = await harness.cdn.get(f"/{harness.open_app.api_key}/{url}", params={"dl": "true"})
    assert dl.status == 200 and await dl.read() == kinds["notes.txt"][0]
    assert dl.headers["Content-Disposition"].startswith("attachment")
    resp = await harness.cdn.get(f"/{harness.open_app.api_key}/flip/{base}photo.jpg")
    assert resp.status == 200 and await resp.read() != kinds["photo.jpg"][0]  # a task: made
