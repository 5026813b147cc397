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
