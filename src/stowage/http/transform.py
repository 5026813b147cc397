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

import contextlib
import dataclasses
import functools
import math
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from urllib.parse import unquote

from aiohttp import web
from yarl import URL

from stowage import errors
from stowage.assembly import Assembly
from stowage.core import headersafe, streams
from stowage.core.filetypes import is_active
from stowage.core.reading import Download
from stowage.core.security import Credentials
from stowage.edge.headers import TAG_HEADER
from stowage.http import fieldlines, inputs, observe, ratelimit, resulttags
from stowage.http.api import download, request_credentials, store_result
from stowage.http.cdnpath import CdnPath, parse
from stowage.http.keys import PARTS
from stowage.http.leaving import unless_gone
from stowage.http.responses import SANDBOX_CSP, disposition, file_headers, send_file
from stowage.processing import archive, docpages, grammar, metrics, videojobs
from stowage.processing.autoimage import negotiated
from stowage.processing.cache import fresh
from stowage.processing.external import Charge, UrlAsk, result_stem
from stowage.processing.results import Derivative, Spooled
from stowage.processing.service import FilesAsk, Processor
from stowage.registry.base import App

_CHUNK = 256 * 1024
URL_MAX_AGE = 3600  # an external URL's result is not kept here; clients may keep it an hour
for _metric in metrics.ALL:
    if _metric not in observe.REGISTRY.metrics:
        observe.REGISTRY.metrics.append(_metric)


async def transform(request: web.Request, path: CdnPath, *, cdn: bool) -> web.StreamResponse:
    parts = request.app[PARTS]
    processor = parts.processor
    request = with_url_source(request, path)
    creds = request_credentials(request, path)
    api_key = path.api_key or request.query.get("key")
    if path.preview is not None:  # the page is the CDN's (http/preview.py)
        raise errors.InvalidParameter("preview is a page of the CDN origin", parameter="preview")
    if videojobs.is_video(path.tasks):  # a job: the URL answers its status
        return await _video(request, path, creds, api_key)
    if (pages := docpages.asked(path.tasks)) is not None:  # each page's image URL
        found = await docpages.answer(processor, pages, path.handle, creds, api_key)
        return web.json_response(found, headers={"Cache-Control": "private, no-cache"})
    # auto_image: the format the client's Accept takes becomes part of the chain.
    path.tasks, varies = negotiated(path.tasks, fieldlines.joined(request.headers, "Accept"))
    if is_url(path) and path.store is not None:  # /<APIKEY>/[tasks/]store/<URL>
        if cdn:
            _to_process_address(request, parts)
        fetching = charger(request)  # each one fetches (and runs a job): it costs the app
        record = await processor.external.stored(url_ask(path, api_key, creds, fetching))
        return web.json_response(store_result(parts.links, record))
    if is_url(path) and _is_zip(path):  # /<APIKEY>/zip/[u1,u2]: fetched, then archived
        fetch = url_ask(path, api_key, creds, charger(request))
        async with processor.external.zipped(fetch) as archived:
            return await _stream_zip(request, archived)
    if is_url(path) and not path.tasks:  # /<APIKEY>/<URL>: the URL's file as it is
        return await _as_is(request, processor, path, api_key, varies)
    if is_url(path):
        return await _external(request, processor, path, api_key, varies, cdn)
    if path.store is not None:
        if cdn:
            _to_process_address(request, parts)
        record = await processor.store(
            FilesAsk(path.handle, path.tasks, creds, api_key, path.handles)
        )
        return web.json_response(store_result(parts.links, record))
    if _is_zip(path):  # zip/H (filestack-python's Filelink.zip()) or zip/[h1,h2]
        return await _send_zip(request, processor, path, api_key)
    if varies and not path.tasks and not path.handles:
        # auto_image for a client taking neither WebP nor AVIF: the file as it is, as
        # if the task were absent, not a render of no task (a JPEG compressed again).
        as_is = functools.partial(resulttags.also, varies=True, handles=[])
        return await download(
            request, cdn=cdn, handle=path.handle, path=path, adjust=as_is, call="convert"
        )
    dl, cache = inputs.flag(request, "dl"), _cache(request, path)

    def headers(opened: Download) -> dict[str, str]:
        found = file_headers(
            opened, parts.settings, dl=dl, cache=cache, cdn=cdn, max_age=path.max_age
        )
        found.setdefault(TAG_HEADER, path.handle)  # the edge cache purges derivatives with it
        return resulttags.also(found, varies, resulttags.read_handles(path))

    async def answer() -> web.StreamResponse:
        try:
            with contextlib.nullcontext() if cache else fresh():  # cache=false: a new render
                charge = None if cache else charger(request)  # a new render costs the app
                ask = FilesAsk(path.handle, path.tasks, creds, api_key, path.handles, charge)
                made = await processor.derivative(ask)
        except errors.StowageError as exc:
            if (backup := _fallback(path, exc)) is None:
                raise
            # Tagged by the files the transformation reads too: a fixed source purges it.
            tagged = functools.partial(
                resulttags.also, varies=varies, handles=resulttags.read_handles(path)
            )
            return await download(
                request, cdn=cdn, handle=backup.handle, path=backup, adjust=tagged
            )
        plan = Download(made.record, made.info, made.provider, made.local_path, made.app)
        # A derivative's key is never rewritten with other bytes: no row to keep to.
        return await send_file(request, plan, headers, None)

    try:
        return await answer()
    except errors.StorageVersionChanged:  # removed as it was opened: its file's new one
        return await answer()


async def _video(
    request: web.Request, path: CdnPath, creds: Credentials, api_key: str | None
) -> web.StreamResponse:
    """``video_convert``/``av_convert``: the job's status (queued on first ask); its
    answer changes, so no cache keeps it."""
    if path.url is not None or not path.handle:
        raise errors.InvalidParameter(
            "video_convert converts a stored file (a handle)", parameter="video_convert"
        )
    found = await request.app[PARTS].video.ask(path.handle, path.tasks, creds, api_key)
    return web.json_response(found, headers={"Cache-Control": "no-store"})


#: Query parameters Stowage reads on a transformation URL: never sent on to an origin.
OWN_PARAMETERS = frozenset({"key", "policy", "signature", "dl", "cache"})


def with_url_source(request: web.Request, path: CdnPath) -> web.Request:
    """An external URL sent as it is (``/<KEY>/resize=w:9/https://host/a.jpg?v=2``)
    takes the request's query string (``with_source_query``); the request is returned as
    Stowage reads its own parameters (a quoted URL's closing quote ends the query)."""
    if path.url is None or not path.url_as_sent:
        return request
    request = _quote_closed(request) if path.url_quote_open else request
    path.url = with_source_query(path, request.raw_path.partition("?")[2])
    return request


def parsed(request: web.Request, raw: str) -> tuple[web.Request, CdnPath]:
    """The CDN path ``raw`` (the request's, or a part of it) as ``cdnpath`` reads it, and
    the request as Stowage then reads its query (``_with_hosted_link``)."""
    path = parse(raw)
    return _with_hosted_link(request, path), path


def _with_hosted_link(request: web.Request, path: CdnPath) -> web.Request:
    """A hosted CDN link read as its handle: its query is read as on a handle's URL, so
    a quoted link's closing quote ends the query string (``/"https://cdn.filestack
    content.com/H?dl=true"``), and a query sent within the link (percent-encoded) joins
    the request's. Any other request is returned as it is."""
    if path.link_query is None:
        return request
    request = _quote_closed(request) if path.url_quote_open else request
    if not path.link_query:
        return request
    head, _, query = request.raw_path.partition("?")
    joined = "&".join(q for q in (query, path.link_query) if q)
    return request.clone(rel_url=URL(f"{head}?{joined}", encoded=True))


def with_source_query(path: CdnPath, query: str) -> str:
    """The request's query string is the source's, as the SDKs build it, but for
    Stowage's own parameters, which stay here (a policy is never sent to the origin)."""
    assert path.url is not None
    url = path.url
    kept = [p for p in query.split("&") if p and unquote(p.partition("=")[0]) not in OWN_PARAMETERS]
    if not kept:
        return url
    return url + ("&" if "?" in url else "?") + "&".join(kept)


def _quote_closed(request: web.Request) -> web.Request:
    """``"https://h/a.jpg?v=2&dl=true"``: the quote that closes the URL is taken out of
    the query string, so that ``dl``, ``cache`` and the credentials read as Stowage's
    own; also where more query follows it (``"https://h/a.jpg?v=2"&dl=true``: the origin
    was asked for ``v=2%22``). The closing quote is the last one that ends a parameter."""
    head, _, query = request.raw_path.partition("?")
    closing = max(_CLOSING_QUOTE.finditer(query), key=lambda m: m.start(), default=None)
    if closing is not None:
        query = query[: closing.start()] + query[closing.end() :]
    return request.clone(rel_url=URL(head + ("?" + query if query else ""), encoded=True))


#: A quote (as sent, or %22) at the end of a parameter.
_CLOSING_QUOTE = re.compile(r'(?:"|%22)(?=&|$)', re.IGNORECASE)


def is_url(path: CdnPath) -> bool:
    """The source is a URL, or a list of them."""
    return path.url is not None or bool(path.urls)


def url_ask(
    path: CdnPath, api_key: str | None, creds: Credentials, charge: Charge | None
) -> UrlAsk:
    url = path.url if path.url is not None else path.urls[0]
    return UrlAsk(api_key, url, path.tasks, creds, charge, path.urls)


def _to_process_address(request: web.Request, parts: Assembly) -> None:
    target = parts.links.process_url(request.raw_path)
    if request.method in ("GET", "HEAD"):
        raise web.HTTPTemporaryRedirect(target)
    raise web.HTTPPermanentRedirect(target)


async def _external(
    request: web.Request,
    processor: Processor,
    path: CdnPath,
    api_key: str | None,
    varies: bool,
    cdn: bool,
) -> web.StreamResponse:
    creds = request_credentials(request, path)
    cache = _cache(request, path)
    charge = charger(request)  # the result is not kept: each request runs a job
    ask = url_ask(path, api_key, creds, charge)
    try:
        with contextlib.nullcontext() if cache else fresh():  # cache=false: drawn anew
            kept = await unless_gone(request, processor.external.kept_screenshot(ask))
        if kept is not None:
            return await _send_kept(request, kept, cache, path, varies)
        result = await unless_gone(request, processor.external.transformed(ask))
    except errors.StowageError as exc:  # an origin down or not an image: the fallback
        if (backup := _fallback(path, exc)) is None:
            raise
        return await download(request, cdn=cdn, handle=backup.handle, path=backup)
    try:
        shown = disposition(
            "attachment" if inputs.flag(request, "dl") else "inline", _name(ask, result)
        )
        return await _send_spooled(request, result, cache, path, varies, shown)
    finally:
        result.path.unlink(missing_ok=True)


def _name(ask: UrlAsk, result: Spooled) -> str:
    """The result's name: its source's (``external.result_stem``), with the result's
    extension."""
    return f"{result_stem(result)}.{result.output.extension}"


async def _as_is(
    request: web.Request,
    processor: Processor,
    path: CdnPath,
    api_key: str | None,
    varies: bool,
) -> web.StreamResponse:
    """``/<APIKEY>/<URL>`` (request tasks only, ``cache``, ``security``): the URL's file
    as it is, as ``/<APIKEY>/<HANDLE>`` answers a stored file: its bytes unchanged, with
    the headers of a download (an active type, HTML or SVG, sent as an attachment).
    ``varies``: an ``auto_image`` whose client took no other format led here."""
    creds = request_credentials(request, path)
    ask = url_ask(path, api_key, creds, charger(request))  # each one fetches: it costs
    settings = request.app[PARTS].settings
    async with processor.external.as_is(ask) as found:
        mimetype = headersafe.safe_content_type(found.mimetype)
        active = is_active(mimetype) and not settings.inline_active_types
        kind = "attachment" if inputs.flag(request, "dl") or active else "inline"
        shown = disposition(kind, found.filename)
        cache = _cache(request, path)
        sent = _Sent(found.path, mimetype, found.private, shown)
        return await _send_file_at(request, sent, cache, path, varies)


@dataclasses.dataclass(frozen=True)
class _Sent:
    """A file answered whole, not kept here: where it is, its type, whether its app's
    security makes it private, and its Content-Disposition."""

    path: Path
    mimetype: str
    private: bool
    shown: str


async def _send_spooled(
    request: web.Request,
    result: Spooled,
    cache: bool,
    path: CdnPath,
    varies: bool,
    shown: str,
) -> web.StreamResponse:
    sent = _Sent(result.path, result.output.mimetype, result.private, shown)
    return await _send_file_at(request, sent, cache, path, varies)


def _max_age(path: CdnPath, otherwise: int) -> int:
    """``cache=expiry:N``, 0 included (it was taken as not given: max-age=3600), else
    ``otherwise``."""
    return path.max_age if path.max_age is not None else otherwise


async def _send_file_at(
    request: web.Request, result: _Sent, cache: bool, path: CdnPath, varies: bool
) -> web.StreamResponse:
    scope = "private" if result.private else "public"
    control = f"{scope}, max-age={_max_age(path, URL_MAX_AGE)}" if cache else "no-store"
    response = web.StreamResponse(
        headers={
            "Content-Type": result.mimetype,
            "Content-Disposition": result.shown,
            "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": SANDBOX_CSP,
            "Cache-Control": control,
            **({"Vary": "Accept"} if varies else {}),
        }
    )
    response.content_length = result.path.stat().st_size
    await response.prepare(request)
    if request.method != "HEAD":
        # Closed here even when the client goes away mid-write, not when collected.
        async with contextlib.aclosing(streams.file_chunks(result.path, _CHUNK)) as chunks:
            async for chunk in chunks:
                await response.write(chunk)
    await response.write_eof()
    return response


async def _send_kept(
    request: web.Request, made: Derivative, cache: bool, path: CdnPath, varies: bool
) -> web.StreamResponse:
    """A result kept for a while (a URL screenshot): clients may keep it as long as it
    stays fresh here, or ``cache=expiry:N``."""
    scope = "private" if made.app.security else "public"
    control = f"{scope}, max-age={_max_age(path, made.fresh_for or 0)}" if cache else "no-store"
    headers = {
        "Content-Type": made.record.mimetype,
        "Content-Disposition": disposition("inline", made.record.filename),
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": SANDBOX_CSP,
        "Accept-Ranges": "bytes",
        "Cache-Control": control,
        **({"Vary": "Accept"} if varies else {}),
    }
    plan = Download(made.record, made.info, made.provider, made.local_path, made.app)
    return await send_file(request, plan, lambda _: headers, None, made.etag)


def _is_zip(path: CdnPath) -> bool:
    return archive.is_zip([grammar.parse_task(task).name for task in path.tasks])


async def _send_zip(
    request: web.Request, processor: Processor, path: CdnPath, api_key: str | None
) -> web.StreamResponse:
    """``zip/[h1,h2]``: every file authorised first, then the archive as it is made."""
    creds = request_credentials(request, path)
    _, chunks = await processor.archive_of(path.sources, creds, api_key)
    return await _stream_zip(request, chunks)


async def _stream_zip(request: web.Request, chunks: AsyncIterator[bytes]) -> web.StreamResponse:
    response = web.StreamResponse(
        headers={
            "Content-Type": archive.MIMETYPE,
            "Content-Disposition": f'attachment; filename="{archive.NAME}"',
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


#: Failures a fallback file stands in for: the source or its transformation, never the
#: request's credentials, its rate or a busy server (those answer as they are).
NO_FALLBACK = frozenset({401, 403, 429, 503})


def _fallback(path: CdnPath, failure: errors.StowageError) -> CdnPath | None:
    """``fallback=handle:H,cache:N``: the stored file H, read with the request's
    credentials, kept N seconds by caches, in place of a failed transformation."""
    tasks = [grammar.parse_task(task) for task in path.tasks]
    fallbacks = [task for task in tasks if task.name == "fallback"]
    if len(fallbacks) != 1 or failure.status in NO_FALLBACK:
        return None  # none, or given twice (the chain's refusal says so): no file stands in
    found = fallbacks[0]
    seconds = found.get("cache", 300)
    max_age = seconds if isinstance(seconds, int) else 300
    handle = str(found.get("handle"))
    return dataclasses.replace(
        path, handle=handle, max_age=max_age, tasks=[], handles=(), url=None, urls=()
    )


def charger(request: web.Request) -> Callable[[App], Awaitable[None]]:
    """cache=false renders anew every time: the request counts against its app's rate
    limit, once (the middleware has charged it already when ``?key=`` named the app)."""

    async def charge(app: App) -> None:
        if request.query.get("key") == app.api_key:
            return
        decision = await request.app[PARTS].limiter.charge_app(app.api_key)
        if decision is not None and not decision.allowed:
            refused = errors.RateLimited(retry_after=math.ceil(decision.retry_after))
            refused.headers.update(ratelimit.headers(decision))
            raise refused

    return charge


def _cache(request: web.Request, path: CdnPath) -> bool:
    return inputs.flag(request, "cache", default=True) and path.cache is not False
