"""API origin handlers: each turns a request into one core call and its result into JSON."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiohttp import web

from stowage import booleans
from stowage.core import digests
from stowage.core.conditions import Conditions
from stowage.core.links import Links
from stowage.core.reading import Download
from stowage.core.security import Credentials
from stowage.core.service import StoreParams
from stowage.core.sources import Source
from stowage.http import fieldlines, inputs
from stowage.http.cdnpath import CdnPath
from stowage.http.edge import edge_bypass
from stowage.http.keys import PARTS
from stowage.http.responses import file_headers, send_file
from stowage.processing import hostedlinks
from stowage.registry.base import FileRecord


def store_result(links: Links, record: FileRecord) -> dict[str, Any]:
    return {
        "url": links.file_url(record),
        "handle": record.handle,
        "size": record.size,
        "type": record.mimetype,
        "filename": record.filename,
        "key": record.key,
        "container": record.container,
    }


def _store_params(request: web.Request) -> StoreParams:
    q = request.query
    return StoreParams(
        filename=q.get("filename"),
        mimetype=q.get("mimetype"),
        path=q.get("path"),
        container=q.get("container"),
        access=q.get("access", "private"),
        base64decode=inputs.flag(request, "base64decode"),
        link=inputs.flag(request, "link"),
        conditions=Conditions(if_none_match=fieldlines.joined(request.headers, "If-None-Match")),
    )


def _checked(request: web.Request, source: Source) -> Source:
    """A body announced with Content-MD5/X-Content-SHA256 is refused (400) if it differs."""
    wanted = digests.expected(request.headers)
    if wanted and source.chunks is not None:
        source.chunks = digests.checked(source.chunks, wanted)
    return source


def _conditions(request: web.Request) -> Conditions:
    headers = request.headers
    return Conditions(
        fieldlines.joined(headers, "If-Match"), fieldlines.joined(headers, "If-None-Match")
    )


async def store_handler(request: web.Request) -> web.Response:
    parts = request.app[PARTS]
    params = _store_params(request)
    body = await inputs.source(request, parts.settings, encoded=params.base64decode)
    source = _checked(request, body)
    record = await store_source(
        request,
        request.query.get("key"),
        request.match_info["provider"],
        source,
        params,
        inputs.credentials(request),
    )
    return web.json_response(store_result(parts.links, record))


async def store_source(
    request: web.Request,
    api_key: str | None,
    provider: str,
    source: Source,
    params: StoreParams,
    creds: Credentials,
) -> FileRecord:
    """A store of ``source``. A hosted CDN link of a stored file (no tasks in it) is that
    file, copied: a migrated app's ``storeURL(cdnLink)`` went out to the hosted service."""
    service = request.app[PARTS].service
    hosted = hostedlinks.read(source.url) if source.url else None
    if hosted is not None and not hosted.tasks:
        return await service.copy(api_key, provider, hosted.handle, params, creds)
    return await service.store(api_key, provider, source, params, creds)


async def copy_handler(request: web.Request) -> web.Response:
    parts = request.app[PARTS]
    record = await parts.service.copy(
        request.query.get("key"),
        request.match_info["provider"],
        request.match_info["handle"],
        _store_params(request),
        inputs.credentials(request),
    )
    return web.json_response(store_result(parts.links, record))


async def download_handler(request: web.Request) -> web.StreamResponse:
    return await download(request, cdn=False)


async def download(
    request: web.Request,
    *,
    cdn: bool,
    handle: str | None = None,
    path: CdnPath | None = None,
    adjust: Callable[[dict[str, str]], dict[str, str]] = lambda found: found,
    call: str = "read",
) -> web.StreamResponse:
    """``adjust``: what a caller adds to the headers (a fallback's: the edge tags of the
    transformation it stands in for); ``call``: what a policy must allow."""
    parts = request.app[PARTS]
    plan = await parts.service.download(
        handle or request.match_info["handle"],
        request_credentials(request, path),
        (path.api_key if path else None) or request.query.get("key"),
        verify=inputs.flag(request, "verify"),
        call=call,
    )
    if cdn and (moved := edge_bypass(parts.settings, request, plan.info.size)):
        return moved
    cache = inputs.flag(request, "cache", default=True)
    if path is not None and path.cache is not None:
        cache = cache and path.cache
    dl = inputs.flag(request, "dl")
    max_age = path.max_age if path else None

    def headers(opened: Download) -> dict[str, str]:  # for the version actually opened
        found = file_headers(opened, parts.settings, dl=dl, cache=cache, cdn=cdn, max_age=max_age)
        return adjust(found)

    return await send_file(request, plan, headers, parts.registry)


async def overwrite_handler(request: web.Request) -> web.Response:
    parts = request.app[PARTS]
    base64decode = inputs.flag(request, "base64decode")
    creds = inputs.credentials(request)
    body = await inputs.source(request, parts.settings, encoded=base64decode)
    source = _checked(request, body)
    record = await parts.service.overwrite(
        request.match_info["handle"],
        source,
        base64decode,
        creds,
        request.query.get("key"),
        conditions=_conditions(request),
    )
    return web.json_response(
        {
            "url": parts.links.file_url(record),
            "handle": record.handle,
            "mimetype": record.mimetype,
            "isWriteable": not record.cloud,
            "size": record.size,
            "filename": record.filename,
        }
    )


async def remove_handler(request: web.Request) -> web.Response:
    service = request.app[PARTS].service
    skip = inputs.flag(request, "skip_storage")
    record = await service.remove(
        request.match_info["handle"],
        inputs.credentials(request),
        skip,
        request.query.get("key"),
    )
    kept = skip or record.cloud
    return web.json_response(
        {"handle": record.handle, "removed": True, "storage": "kept" if kept else "deleted"}
    )


async def metadata_handler(
    request: web.Request, handle: str | None = None, path: CdnPath | None = None
) -> web.Response:
    service = request.app[PARTS].service
    selectors = {name for name in request.query if inputs.flag_value(request, name)}
    api_key = request.query.get("key")
    if booleans.is_word(api_key):
        api_key = None  # `key=true` is the python SDK asking for the key field, not an app
    result = await service.metadata(
        handle or request.match_info["handle"],
        selectors,
        request_credentials(request, path),
        (path.api_key if path else None) or api_key,
    )
    return web.json_response(result)


def request_credentials(request: web.Request, path: CdnPath | None) -> Credentials:
    """Query credentials, and a CDN path's ``security=`` task (the same pair, if both)."""
    creds = inputs.credentials(request)
    if path is None:
        return creds
    return inputs.with_pair(creds, path.policy, path.signature)


async def healthz(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


async def readyz(request: web.Request) -> web.Response:
    """Readiness for a load balancer: the registry answers with the schema this node knows,
    and the node is not draining. Failures are 503 error bodies."""
    await request.app[PARTS].ready()
    return web.json_response({"status": "ready"})
