"""``debug``: a transformation URL with ``debug`` before its source
(``/debug/<tasks>/<HANDLE>``, ``/<APIKEY>/debug/<tasks>/<URL>``, ``/debug/<APIKEY>/...``:
as the hosted service documents it and the PHP, Java and Ruby SDKs build it) answers a
JSON report instead of the result: the tasks as read, the source, the result's type,
size and dimensions, or the error the transformation met.

The transformation runs as it would without ``debug``, with the same credentials and
the same kept result (``cache=false`` draws nothing anew here). A request refused for
its credentials, its rate or a busy server is answered as it would be, not reported:
a report tells nothing that the transformation itself would not.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from stowage import errors
from stowage.core import imagesize
from stowage.http import fieldlines, transform
from stowage.http.api import request_credentials
from stowage.http.cdnpath import CdnPath, DebugAsk
from stowage.http.keys import PARTS
from stowage.processing import archive, docpages, grammar, videojobs
from stowage.processing.autoimage import negotiated
from stowage.processing.results import Derivative
from stowage.processing.service import FilesAsk

_NOT_RUN = (
    "debug reports a transformation of one stored file or URL; it does not run "
    "store, zip, preview, video_convert or doc_to_images"
)


async def report(request: web.Request, asked: DebugAsk) -> web.Response:
    clock = time.perf_counter()
    body: dict[str, Any] = {
        "apikey": asked.api_key or request.query.get("key"),
        "debug": True,
        "start_time": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
        "task_uri": asked.task_uri,
        "source": None,
        "chain": None,
        "result": None,
    }
    try:
        request, path = transform.parsed(request, asked.path)
        if _not_run(path):
            await _authorized(request, path)  # refused credentials are answered, not reported
            raise errors.InvalidParameter(_NOT_RUN, parameter="debug")
        # auto_image: the format the client's Accept takes becomes part of the chain.
        path.tasks, _ = negotiated(path.tasks, fieldlines.joined(request.headers, "Accept"))
        body["chain"] = [_described(segment) for segment in path.tasks]
        body.update(await _run(request, path))
        body["status"] = {"message": "ok", "http_code": 200}
    except errors.StowageError as exc:
        if exc.status in transform.NO_FALLBACK:
            raise
        body["status"] = {"message": exc.message, "http_code": exc.status, "code": exc.code}
    body["processing_time"] = f"{(time.perf_counter() - clock) * 1000:.3f}ms"
    return web.json_response(body, headers={"Cache-Control": "no-store"})


def _described(segment: str) -> dict[str, Any]:
    task = grammar.parse_task(segment)
    return {"task": task.name, "params": dict(task.options)}


def _not_run(path: CdnPath) -> bool:
    names = [grammar.parse_task(segment).name for segment in path.tasks]
    return (
        not path.tasks
        or path.store is not None
        or path.preview is not None
        or archive.is_zip(names)
        or videojobs.is_video(path.tasks)
        or docpages.asked(path.tasks) is not None
    )


async def _authorized(request: web.Request, path: CdnPath) -> None:
    """The checks of the request's credentials that the transformation would make."""
    creds = request_credentials(request, path)
    api_key = path.api_key or request.query.get("key")
    processor = request.app[PARTS].processor
    if transform.is_url(path):
        await processor.external.authorized(transform.url_ask(path, api_key, creds, None))
    else:
        await processor.authorized(FilesAsk(path.handle, path.tasks, creds, api_key, path.handles))


async def _run(request: web.Request, path: CdnPath) -> dict[str, Any]:
    if transform.is_url(path):
        return await _run_url(request, path)
    creds = request_credentials(request, path)
    api_key = path.api_key or request.query.get("key")
    ask = FilesAsk(path.handle, path.tasks, creds, api_key, path.handles)
    made, record = await request.app[PARTS].processor.described(ask)
    source = {"handle": record.handle, "mimetype": record.mimetype, "size": record.size}
    return {"source": source, "result": await _kept(made)}


async def _run_url(request: web.Request, path: CdnPath) -> dict[str, Any]:
    request = transform.with_url_source(request, path)
    creds = request_credentials(request, path)
    api_key = path.api_key or request.query.get("key")
    ask = transform.url_ask(path, api_key, creds, transform.charger(request))
    external = request.app[PARTS].processor.external
    source: dict[str, Any] = {"urls": list(path.urls)} if path.urls else {"url": path.url}
    kept = await external.kept_screenshot(ask)
    if kept is not None:
        return {"source": source, "result": await _kept(kept)}
    spooled = await external.transformed(ask)
    try:
        result: dict[str, Any] = {
            "mimetype": spooled.output.mimetype,
            "size": spooled.path.stat().st_size,
        }
        if spooled.output.mimetype.startswith("image/"):
            found = await asyncio.to_thread(imagesize.dimensions_in, spooled.path)
            if found is not None:
                result["width"], result["height"] = found
        return {"source": source, "result": result}
    finally:
        spooled.path.unlink(missing_ok=True)


async def _kept(made: Derivative) -> dict[str, Any]:
    """A kept result's type, size and, for an image, its sides (from its header)."""
    sides = await imagesize.fields(made.provider, made.record, made.info.size, ("width", "height"))
    return {"mimetype": made.record.mimetype, "size": made.info.size, **sides}
