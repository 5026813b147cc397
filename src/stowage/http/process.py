"""``POST /process``: the subset of Filestack's processing API the SDKs use to store a
file from a URL (``client.upload_url`` in python, ``client.storeURL`` in js).

Tasks ``store`` and ``security`` are understood; any other task is refused with
``400 UNSUPPORTED_TASK`` rather than silently skipped.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from stowage import errors
from stowage.core.service import StoreParams
from stowage.core.sources import Source
from stowage.core.uploads import provider_for_location
from stowage.http import inputs, strict
from stowage.http.api import store_result, store_source
from stowage.http.keys import PARTS
from stowage.http.multipart import truthy

SUPPORTED = ("store", "security")


async def process_handler(request: web.Request) -> web.Response:
    parts = request.app[PARTS]
    body = await _body(request)
    url = _source(body.get("sources"))
    store, security = _tasks(body.get("tasks"))
    # the query pair and Basic credentials as on every route; a security task's pair
    # beside a query pair must be the same pair (inputs.with_pair)
    pair = _text(security.get("policy")), _text(security.get("signature"))
    creds = inputs.with_pair(inputs.credentials(request), *pair)
    record = await store_source(
        request,
        _text(body.get("apikey") or body.get("apiKey")),
        provider_for_location(_text(store.get("location"))),
        Source(url=url),
        StoreParams(
            filename=_text(store.get("filename")),
            path=_text(store.get("path")),
            container=_text(store.get("container")),
            access=_text(store.get("access")) or "private",
            base64decode=truthy(store.get("base64decode"), "base64decode"),
        ),
        creds,
    )
    tags = body.get("upload_tags")
    return web.json_response(
        {
            **store_result(parts.links, record),
            "mimetype": record.mimetype,
            "status": "Stored",
            "upload_tags": tags if isinstance(tags, dict) else None,
        }
    )


async def redirect_to_api(request: web.Request) -> web.Response:
    """The CDN origin stays read-only: python's SDK posts here, so send it to the API
    origin, keeping method and body (308)."""
    raise web.HTTPPermanentRedirect(request.app[PARTS].links.process_url())


async def _body(request: web.Request) -> dict[str, Any]:
    body = await strict.read_json(request)
    if not isinstance(body, dict):
        raise errors.BadRequest("the body must be a JSON object")
    return body


def _source(sources: Any) -> str:
    if not isinstance(sources, list) or len(sources) != 1:
        raise errors.InvalidParameter("sources must hold exactly one url", parameter="sources")
    source = sources[0]
    if isinstance(source, dict):
        if source.get("headers"):
            raise errors.UnsupportedTask("sources with headers are not supported")
        source = source.get("source")
    if not isinstance(source, str) or not source:
        raise errors.InvalidParameter("the source must be a url", parameter="sources")
    return source


def _tasks(tasks: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    if not isinstance(tasks, list):
        raise errors.InvalidParameter("tasks must be a list", parameter="tasks")
    found: dict[str, dict[str, Any]] = {}
    for task in tasks:
        name = task.get("name") if isinstance(task, dict) else None
        if name not in SUPPORTED:
            raise errors.UnsupportedTask(
                f"task {name!r} is not supported; only store and security", task=str(name)
            )
        params = task.get("params") or {}
        if not isinstance(params, dict):
            raise errors.InvalidParameter(f"params of {name} must be an object", parameter=name)
        if name in found:  # a second one would be merged, or one policy left unchecked
            raise errors.InvalidParameter(f"{name} appears once in tasks", parameter=name)
        found[name] = params
    if "store" not in found:
        raise errors.InvalidParameter("a store task is required", parameter="tasks")
    return found["store"], found.get("security", {})


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
