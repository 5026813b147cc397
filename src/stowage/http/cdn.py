"""The CDN origin: read-only, on its own port, so user files never share the API's origin.

Every GET is parsed as one of the URL forms of ``cdnpath`` (handle, security and cache
tasks, an API key, ``/metadata``); a path that asks for ``debug`` is answered by its
report (``debug.py``), here and on the API origin's ``/process/`` address, whose chains
are read here too. ``POST /process`` is sent on to the API origin. The first File API's
addresses, which saved links still hold, are served too: ``/api/file/<HANDLE>`` (a CDN
link of filepicker.io) and ``/api/file/<HANDLE>/convert?w=...`` (``processing/legacy``).
"""

from __future__ import annotations

from urllib.parse import quote

from aiohttp import web
from yarl import URL

from stowage import errors
from stowage.http import cdnpath, debug, playlist, preview, transform
from stowage.http.api import download, metadata_handler
from stowage.http.cdnpath import CdnPath
from stowage.http.keys import PARTS
from stowage.processing import legacy, listsources


async def cdn_get(request: web.Request) -> web.StreamResponse:
    request = with_list_whole(request)
    raw = request.raw_path.split("?", 1)[0]
    if (asked := cdnpath.debug_asked(raw)) is not None:
        return await debug.report(request, asked)
    request, path = transform.parsed(request, raw)
    if path.preview is not None:  # /preview/<HANDLE>: the viewer page
        return await preview.page(request, path)
    return await answer(request, path, cdn=True)


async def answer(request: web.Request, path: CdnPath, *, cdn: bool) -> web.StreamResponse:
    """One parsed path's answer, the same on both origins: a chain with a processing task
    (or a URL source) is transformed; with none (a handle alone, or with only ``cache`` or
    ``security``) it is the stored file as it is, or its metadata (``/<HANDLE>/metadata``),
    a download's read and checks, never a render of no task."""
    if path.playlist:  # /<APIKEY>/video_playlist/<HANDLE>
        return await playlist.answer(request, path)
    if path.tasks or path.preview is not None or transform.is_url(path):
        return await transform.transform(request, path, cdn=cdn)
    if path.metadata:
        return await metadata_handler(request, handle=path.handle, path=path)
    return await download(request, cdn=cdn, handle=path.handle, path=path)


async def chain_on_api(request: web.Request) -> web.StreamResponse:
    """The API origin's process address: ``/process/<tasks>/<HANDLE or URL>``."""
    request = with_list_whole(request)
    raw = request.raw_path.split("?", 1)[0].removeprefix("/process")
    if (asked := cdnpath.debug_asked(raw)) is not None:
        return await debug.report(request, asked)
    request, path = transform.parsed(request, raw)
    return await answer(request, path, cdn=False)  # the CDN form's answer (preview: refused)


async def cdn_post_chain(request: web.Request) -> web.StreamResponse:
    request = with_list_whole(request)
    request, path = transform.parsed(request, request.raw_path.split("?", 1)[0])
    if not path.tasks:
        raise errors.CdnLinkRefused()
    return await transform.transform(request, path, cdn=True)


def with_list_whole(request: web.Request) -> web.Request:
    """A list of URLs as filestack-js sends it, ``/<KEY>/animate/["https://h/a.jpg?v=1",
    "https://h/b.jpg"]``: its first ``?`` is inside the list, which the request's query
    string then holds the rest of. The list is taken whole into the path, percent-encoded
    whole (its brackets, quotes and commas kept): the grammar decodes such a list once,
    which gives back every URL in it as it was sent, ``%20`` and ``%3F`` included, also
    after a redirect to the process address. What follows its ``]`` is the request's own
    query (``?dl=true``). Any other request is returned as it is."""
    head, sep, tail = request.raw_path.partition("?")
    found = listsources.opening(head)
    if not sep or found is None:
        return request
    opened, rest = found.start(), head[found.start() :].rstrip("/")
    # Closed before the query: by a ``]`` (a listed URL's path holds none as sent), or,
    # opened as ``%5B``, by the ``%5D`` that ends the path (one within it is a URL's own).
    if "]" in rest or (rest[1] != "[" and rest.upper().endswith("%5D")):
        return request
    end = max(tail.rfind("]"), tail.upper().rfind("%5D"))
    if end < 0:
        return request
    close = end + (1 if tail[end] == "]" else 3)
    own = tail[close:].lstrip("?&")
    opening = 2 if head[opened + 1] == "[" else 4
    listed = head[opened + opening :] + "?" + tail[:end]  # between the brackets, as sent
    listed = listsources.marked_quotes(listed)  # %22: an item's quote, or a URL's own
    path = head[: opened + 1] + "[" + quote(listed, safe='",') + "]"
    return request.clone(rel_url=URL(path + ("?" + own if own else ""), encoded=True))


async def cdn_refuse_write(request: web.Request) -> web.Response:
    raise errors.CdnLinkRefused()


async def legacy_on_cdn(request: web.Request) -> web.StreamResponse:
    return await _legacy(request, cdn=True)


async def legacy_store_to_api(request: web.Request) -> web.Response:
    """A convert link POSTed to the CDN origin (which stores nothing): sent on to the API
    origin's same address, method and body kept (308), as a chain with ``store`` is."""
    target = request.app[PARTS].links.api_file_url(request.match_info["handle"]) + "/convert"
    query = request.query_string
    raise web.HTTPPermanentRedirect(f"{target}?{query}" if query else target)


async def legacy_on_api(request: web.Request) -> web.StreamResponse:
    return await _legacy(request, cdn=False)


async def _legacy(request: web.Request, *, cdn: bool) -> web.StreamResponse:
    """``/api/file/<HANDLE>[/convert]``: the conversion query read as today's chain; a
    POST (the API origin's) stores its result as a new file."""
    converts = request.path.removesuffix("/").endswith("/convert")
    storing = request.method == "POST"
    tasks = legacy.chain_of(request.query, storing=storing) if converts else []
    path = cdnpath.parse("/" + "/".join([*tasks, request.match_info["handle"]]))
    if tasks:
        return await transform.transform(request, path, cdn=cdn)
    return await download(request, cdn=cdn, handle=path.handle, path=path)
