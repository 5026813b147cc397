"""The stored files a URL source's tasks name (``/<KEY>/watermark=file:<H>/<URL>``, a
collage's ``files``): each authorised by the policy rule that concerns it, and looked up
before the URL is fetched."""

from __future__ import annotations

import re
from typing import Any

from stowage.registry.base import App
from tests.api.harness import Harness
from tests.api.test_transform import picture, stored
from tests.api.test_transform_urls import Origin, origin

__all__ = ["origin"]  # the recording loopback origin, a fixture


def _tasks(named: tuple[str, ...]) -> str:
    if not named:
        return "flip"
    if len(named) == 1:
        return f"watermark=file:{named[0]}"
    return f"collage=files:[{','.join(named)}],width:120,height:60"


def _grants(policy: dict[str, Any], url: str, named: tuple[str, ...]) -> bool:
    """docs/security.md: the URL by ``url`` (a handle-only policy names no URL), each
    named handle by ``handle``."""
    url_ok = (
        re.fullmatch(policy["url"], url) is not None if "url" in policy else "handle" not in policy
    )
    return url_ok and all(policy.get("handle", h) == h for h in named)


async def test_a_policy_with_a_url_and_a_handle_rule_allows_that_handle_on_that_url(
    harness: Harness, origin: Origin
) -> None:
    """Every policy of {no handle rule, the mark's, another file's} x {no url rule, the
    origin's, another host's} x named {none, the mark, the other, both}: 200 exactly when
    the URL passes ``url`` and each named handle ``handle``, else 403 POLICY_DENIED. A
    policy with both rules was refused ("policy is for another handle")."""
    app: App = harness.secure_app
    mark = await stored(harness, picture(40, 20, ".png"), name="m.png", app=app)
    other = await stored(harness, picture(30, 30, ".png"), name="o.png", app=app)
    host = origin.url.rsplit("/", 1)[0]
    for handle_rule in (None, mark, other):
        for url_rule in (None, re.escape(host) + "/.*", r"https://elsewhere\.example/.*"):
            fields: dict[str, Any] = {"call": ["convert"]}
            if handle_rule is not None:
                fields["handle"] = handle_rule
            if url_rule is not None:
                fields["url"] = url_rule
            signed = harness.policy(app, **fields)
            for named in ((), (mark,), (other,), (mark, other)):
                path = f"/{app.api_key}/{_tasks(named)}/{origin.url}"
                resp = await harness.cdn.get(path, params=signed)
                body = await resp.read()
                expected = _grants(fields, origin.url, named)
                assert resp.status == (200 if expected else 403), (fields, named, body[:300])
                if not expected:
                    assert b'"POLICY_DENIED"' in body, body


async def test_a_named_file_the_app_cannot_read_is_refused_before_the_url_is_fetched(
    harness: Harness, origin: Origin
) -> None:
    """On an app without security, ``/<KEY>/watermark=file:<another app's handle>/<URL>``
    asked the origin for the URL, then answered 404. Every chain shape that names a file
    (watermark, collage, one good and one bad, a list of URLs, a store after) with a file
    that is unknown, another app's or removed: 404 HANDLE_NOT_FOUND, the origin never
    asked; with a good file the same chains fetch."""
    app = harness.open_app
    good = await stored(harness, picture(40, 20, ".png"), name="m.png", app=app)
    others = await stored(harness, picture(40, 20, ".png"), name="x.png", app=harness.secure_app)
    removed = await stored(harness, picture(40, 20, ".png"), name="r.png", app=app)
    signed = {"key": app.api_key, **harness.policy(app, call=["remove"])}
    gone = await harness.api.delete(f"/api/file/{removed}", params=signed)
    assert gone.status == 200, await gone.text()
    base = origin.url.rsplit("/", 1)[0]
    shapes = [
        ("watermark=file:{}", origin.url),
        ("collage=files:[{}],width:120,height:60", origin.url),
        ("collage=files:[" + good + ",{}],width:120,height:60", origin.url),
        ("watermark=file:{}", f'animate/["{base}/a.png","{base}/b.png"]'),
        ("watermark=file:{}/store", origin.url),
    ]
    for bad in ("Unknownhandle0000000", others, removed):
        for tasks, url in shapes:
            before = len(origin.queries)
            path = f"/{app.api_key}/{tasks.format(bad)}/{url}"
            # a store is sent to the API origin (the CDN redirects it there)
            client = harness.api if "store" in tasks else harness.cdn
            resp = await client.get(("/process" if "store" in tasks else "") + path)
            body = await resp.read()
            assert resp.status == 404, (tasks, body[:300])
            assert b'"HANDLE_NOT_FOUND"' in body, body
            assert len(origin.queries) == before, (tasks, url, origin.queries[before:])
    for tasks, url in shapes[:4]:  # the same chains with a file the app has: fetched
        before = len(origin.queries)
        resp = await harness.cdn.get(f"/{app.api_key}/{tasks.format(good)}/{url}")
        assert resp.status == 200, (tasks, (await resp.read())[:300])
        assert len(origin.queries) > before
