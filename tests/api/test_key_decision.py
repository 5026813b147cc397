"""One decision for the ``key`` of a call on a handle, on every route family of both origins:
API download and metadata, CDN download and metadata, CDN transformation and the API's
process address, with the key in the query or (on the CDN) as the path's first segment.

The combinations are generated: every route form, every kind of key (none, the file's own
app, an app that does not exist, another existing app) on an app with and one without
security. The same mistake gets the same answer everywhere (issue 22: ``?key=bogus`` was
400 on ``/api/file/H`` and 404 on ``/resize=.../H``)."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from stowage.registry.base import App
from tests.api.harness import Harness
from tests.api.test_transform import picture, stored

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")

BOGUS = "nosuchappkey00000001"
KEY_KINDS = ("none", "own", "bogus", "other")
Route = tuple[str, str, Callable[[str, str | None], str]]


def _query(path: str, key: str | None) -> str:
    return f"{path}?key={key}" if key else path


def _cdn(prefix: str, suffix: str = "") -> Callable[[str, str | None], str]:
    """A CDN form with the key as its first segment."""

    def build(handle: str, key: str | None) -> str:
        return "/" + "/".join(s for s in (key, prefix, handle + suffix) if s)

    return build


ROUTES: list[Route] = [
    ("api download", "api", lambda h, k: _query(f"/api/file/{h}", k)),
    ("api metadata", "api", lambda h, k: _query(f"/api/file/{h}/metadata", k)),
    ("api process", "api", lambda h, k: _query(f"/process/resize=width:8/{h}", k)),
    ("cdn download", "cdn", lambda h, k: _query(f"/{h}", k)),
    ("cdn metadata", "cdn", lambda h, k: _query(f"/{h}/metadata", k)),
    ("cdn transform", "cdn", lambda h, k: _query(f"/resize=width:8/{h}", k)),
    ("cdn download, key in path", "cdn", _cdn("")),
    ("cdn metadata, key in path", "cdn", _cdn("", "/metadata")),
    ("cdn transform, key in path", "cdn", _cdn("resize=width:8")),
]


def expected(kind: str, secure: bool) -> tuple[int, str | None]:
    if kind == "bogus":
        return 400, "UNKNOWN_API_KEY"
    if kind == "other":
        return 404, "HANDLE_NOT_FOUND"
    return (401, "AUTH_REQUIRED") if secure else (200, None)


def key_of(kind: str, app: App, other: App) -> str | None:
    return {"none": None, "own": app.api_key, "bogus": BOGUS, "other": other.api_key}[kind]


@pytest.mark.parametrize("secure", [False, True], ids=["open", "security"])
async def test_every_route_decides_a_key_the_same_way(harness: Harness, secure: bool) -> None:
    app, other = (harness.secure_app, harness.open_app)
    if not secure:
        app, other = other, app
    handle = await stored(harness, picture(32, 24), app=app)
    wrong: list[str] = []
    for (name, origin, build), kind in itertools.product(ROUTES, KEY_KINDS):
        client = harness.api if origin == "api" else harness.cdn
        resp = await client.get(build(handle, key_of(kind, app, other)), allow_redirects=False)
        body = await resp.read()
        code = (await resp.json())["error"]["code"] if resp.status >= 400 else None
        if (resp.status, code) != expected(kind, secure):
            wrong.append(f"{name}, key {kind}: {resp.status} {code} {body[:120]!r}")
    assert not wrong, "\n".join(wrong)
