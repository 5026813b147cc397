"""Transformation URLs: thin handlers over ``stowage.processing``.

    CDN  GET  /<task>[/<task>...]/<HANDLE>            (python SDK; bare names: /flip/...)
    CDN  GET  /<APIKEY>/<tasks>/<HANDLE>              (js SDK)
    CDN  GET  /<APIKEY>/<tasks>/<URL>                 (an external source, through the guard)
    API  GET|POST /process/<same forms>               (the process address)

A chain ending in ``store`` writes a new file: on the API origin it is answered there;
the CDN origin stays read-only and sends it on to the API's process address with 307
or 308, which keep the method (python's ``Transformation.store()`` POSTs to the CDN).
"""

from __future__ import annotations

import weakref

from aiohttp import web

from stowage import errors
from stowage.core.reading import Download
from stowage.core.service import Stowage
from stowage.edge.headers import TAG_HEADER
from stowage.http import cdnpath, inputs, observe
from stowage.http.api import request_credentials, store_result
from stowage.http.cdnpath import CdnPath
from stowage.http.keys import SERVICE
from stowage.http.responses import SANDBOX_CSP, file_headers, send_file
from stowage.processing import grammar, metrics
from stowage.processing.service import Core, Processor, Spooled

_PROCESSORS: weakref.WeakKeyDictionary[Stowage, Processor] = weakref.WeakKeyDictionary()
_CHUNK = 256 * 1024
URL_MAX_AGE = 3600  # an external URL's result is not kept here; clients may keep it an hour
for _metric in metrics.ALL:
    if _metric not in observe.REGISTRY.metrics:
        observe.REGISTRY.metrics.append(_metric)


def processor_for(service: Stowage) -> Processor:
    """One processor per service (its job pool, its single-flight table), shared by the
    API and CDN origins; it hears of overwrites and deletes to drop old derivatives."""
    if service not in _PROCESSORS:
        core = Core(
            service.settings, service.registry, service.providers, service.fetcher, service.store
        )
        processor = Processor(core)
        service.on_change.append(processor.forget)
        _PROCESSORS[service] = processor
    return _PROCESSORS[service]


async def transform(request: web.Request, path: CdnPath, *, cdn: bool) -> web.StreamResponse:
    service = request.app[SERVICE]
    processor = processor_for(service)
    creds = request_credentials(request, path)
    api_key = path.api_key or request.query.get("key")
    if path.url is not None:
        return await _external(request, processor, path, api_key)
    if path.store is not None:
        if cdn:
            _to_process_address(request, service)
        record = await processor.store(path.handle, path.tasks, creds, api_key)
        return web.json_response(store_result(service, record))
    if _is_zip(path):  # zip/H (filestack-python's Filelink.zip()) or zip/[h1,h2]
        return await _send_zip(request, processor, path, api_key)
    made = await processor.derivative(path.handle, path.tasks, creds, api_key, path.handles)
    plan = Download(made.record, made.info, made.provider, made.local_path, made.app)
    dl, cache = inputs.flag(request, "dl"), _cache(request, path)

    def headers(opened: Download) -> dict[str, str]:
        found = file_headers(
            opened, service.settings, dl=dl, cache=cache, cdn=cdn, max_age=path.max_age
        )
        found.setdefault(TAG_HEADER, path.handle)  # the edge cache purges derivatives with it
        return found

    # A derivative's key is never rewritten with other bytes: no row version to keep to.
    return await send_file(request, plan, headers, None)


async def process_handler(request: web.Request) -> web.StreamResponse:
    """The API origin's process address: ``/process/<tasks>/<HANDLE or URL>``."""
    raw = request.raw_path.split("?", 1)[0].removeprefix("/process")
    return await transform(request, cdnpath.parse(raw), cdn=False)


def _to_process_address(request: web.Request, service: Stowage) -> None:
    root = service.settings.api_url().removesuffix("/api")
    target = f"{root}/process{request.raw_path}"
    if request.method in ("GET", "HEAD"):
        raise web.HTTPTemporaryRedirect(target)
    raise web.HTTPPermanentRedirect(target)


async def _external(
    request: web.Request, processor: Processor, path: CdnPath, api_key: str | None
) -> web.StreamResponse:
    assert path.url is not None
    creds = request_credentials(request, path)
    result = await processor.from_url(api_key, path.url, path.tasks, creds)
    try:
        return await _send_spooled(request, result, _cache(request, path), path)
    finally:
        result.path.unlink(missing_ok=True)


async def _send_spooled(
    request: web.Request, result: Spooled, cache: bool, path: CdnPath
) -> web.StreamResponse:
    scope = "private" if result.private else "public"
    control = f"{scope}, max-age={path.max_age or URL_MAX_AGE}" if cache else "no-store"
    response = web.StreamResponse(
        headers={
            "Content-Type": result.output.mimetype,
            "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": SANDBOX_CSP,
            "Cache-Control": control,
        }
    )
    response.content_length = result.path.stat().st_size
    await response.prepare(request)
    if request.method != "HEAD":
        with result.path.open("rb") as handle:
            while chunk := handle.read(_CHUNK):
                await response.write(chunk)
    await response.write_eof()
    return response


def _is_zip(path: CdnPath) -> bool:
    names = [grammar.parse_task(task).name for task in path.tasks]
    if "zip" in names and names != ["zip"]:
        raise errors.InvalidParameter("zip takes no other tasks", parameter="zip")
    return names == ["zip"]


async def _send_zip(
    request: web.Request, processor: Processor, path: CdnPath, api_key: str | None
) -> web.StreamResponse:
    """``zip/[h1,h2]``: every file authorised first, then the archive as it is made."""
    creds = request_credentials(request, path)
    chunks = await processor.archive_of(path.sources, creds, api_key)
    response = web.StreamResponse(
        headers={
            "Content-Type": "application/zip",
            "Content-Disposition": 'attachment; filename="files.zip"',
            "X-Content-Type-Options": "nosniff",
            "Cache-Control": "private, no-store",
        }
    )
    await response.prepare(request)
    if request.method != "HEAD":
        async for chunk in chunks:
            await response.write(chunk)
    await response.write_eof()
    return response


def _cache(request: web.Request, path: CdnPath) -> bool:
    return inputs.flag(request, "cache", default=True) and path.cache is not False


async def _close(app: web.Application) -> None:
    processor = _PROCESSORS.get(app[SERVICE])
    if processor is not None:
        await processor.close()


def install(app: web.Application) -> None:
    """The engine runs while the API application does (its routes: ``http/routes.py``)."""
    processor_for(app[SERVICE])
    app.on_cleanup.append(_close)
