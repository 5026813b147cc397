"""File responses: headers that make serving user content safe, Range and conditionals."""

from __future__ import annotations

import dataclasses
import email.utils
import hashlib
import os
import pathlib
import re
import weakref
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from aiohttp import hdrs, web
from aiohttp.abc import AbstractStreamWriter

from stowage import errors
from stowage.config import Settings
from stowage.core import headersafe, reading
from stowage.core.conditions import content_etag, matches
from stowage.core.filetypes import is_active
from stowage.core.reading import Download, VersionRows
from stowage.edge.headers import PIPED_HEADER, origin_headers, without_edge_headers
from stowage.http import dates, fieldlines
from stowage.http.pinned import pinned
from stowage.http.sendfile import LoopFileResponse

_RANGE = re.compile(r"([0-9]*)-([0-9]*)")  # [0-9]: \d takes any script's digits
_MAX_DIGITS = 30  # int() refuses over 4300 digits; anything this long is past any size
_HEADER_UNSAFE = re.compile(r'[^\x20-\x7e]|["\\]')
SANDBOX_CSP = (
    "sandbox; default-src 'none'; img-src 'self' data:; media-src 'self'; style-src 'unsafe-inline'"
)


class StoredFileResponse(LoopFileResponse):
    """aiohttp's sendfile response, minus its habit of serving a sibling ``<name>.gz``:
    another handle's object may sit at that key. ``canonical`` is the request as aiohttp
    must see it: its Range already judged by ``parse_range`` (aiohttp's own answers an
    unknown unit or several ranges with an empty 416)."""

    canonical: web.BaseRequest | None = None
    #: The ETag that names this content; aiohttp's own (mtime and size) otherwise. With it
    #: the conditionals are judged in ``send_file``, and aiohttp sees none.
    content_etag: str | None = None

    _unpin: Callable[[], None] | None = None

    def pin(self, fd: int) -> None:
        """Serve the open file ``fd`` (this response's ``/proc/self/fd/<fd>``); it is
        closed once the answer is made, or with the response if it never is."""
        self._unpin = weakref.finalize(self, os.close, fd)

    async def prepare(self, request: web.BaseRequest) -> AbstractStreamWriter | None:
        try:
            return await super().prepare(self.canonical or request)
        finally:
            if self._unpin is not None:
                self._unpin()

    @property
    def etag(self) -> Any:
        return web.StreamResponse.etag.fget(self)  # type: ignore[attr-defined]

    @etag.setter
    def etag(self, value: Any) -> None:
        # aiohttp sets its mtime-size tag just before the headers leave: keep ours. Ours
        # are hex digests; one is set without aiohttp's pattern check (on every GET).
        tag = self.content_etag
        if tag and tag.isascii() and tag.isalnum():
            self.headers[hdrs.ETAG] = f'"{tag}"'
        else:
            web.StreamResponse.etag.fset(self, tag or value)  # type: ignore[attr-defined]

    @property
    def last_modified(self) -> Any:
        return web.StreamResponse.last_modified.fget(self)  # type: ignore[attr-defined]

    @last_modified.setter
    def last_modified(self, value: Any) -> None:
        # aiohttp rounds the file's time up: one written this second was a second past Date.
        if isinstance(value, int | float):
            value = dates.last_modified(value)
        web.StreamResponse.last_modified.fset(self, value)  # type: ignore[attr-defined]

    def _get_file_path_stat_encoding(
        self, accept_encoding: str
    ) -> tuple[pathlib.Path | None, Any, str | None]:
        path = pathlib.Path(self._path)
        st = path.stat()
        return path, st, None


def disposition(kind: str, filename: str) -> str:
    fallback = _HEADER_UNSAFE.sub("_", filename) or "file"
    encoded = quote(filename, safe="", errors="replace")  # rows stored before names.py
    return f"{kind}; filename=\"{fallback}\"; filename*=UTF-8''{encoded}"


def file_headers(
    plan: Download,
    settings: Settings,
    *,
    dl: bool,
    cache: bool,
    cdn: bool,
    max_age: int | None = None,
) -> dict[str, str]:
    record = plan.record
    mimetype = headersafe.safe_content_type(record.mimetype)  # rows stored before the checks
    attach = dl or (is_active(mimetype) and not settings.inline_active_types)
    headers = {
        "Content-Type": mimetype,
        "Content-Disposition": disposition("attachment" if attach else "inline", record.filename),
        "X-File-Name": _HEADER_UNSAFE.sub("_", record.filename),
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": SANDBOX_CSP,
        "Accept-Ranges": "bytes",
        "Cache-Control": _cache_control(
            settings, cache=cache, cdn=cdn, private=plan.app.security, max_age=max_age
        ),
    }
    if cdn:
        headers.update(
            origin_headers(
                settings,
                record,
                plan.info.size,
                secured=plan.app.security,
                cacheable=cache,
                max_age=max_age,
            )
        )
    return headers


def _cache_control(
    settings: Settings, *, cache: bool, cdn: bool, private: bool, max_age: int | None = None
) -> str:
    if not cache:
        return "no-store"
    if max_age is not None:  # the CDN task cache=expiry:<seconds>
        return f"{'private' if private else 'public'}, max-age={max_age}"
    if cdn and not private:  # 0: revalidate each time, an overwrite keeps the URL
        if settings.cdn_max_age == 0:
            return "public, no-cache"
        return f"public, max-age={settings.cdn_max_age}"
    return "private, no-cache"


def parse_range(header: str | None, size: int) -> tuple[int, int] | None:
    """One byte range, inclusive; None for none or one that is ignored (RFC 9110 14.2: an
    unknown unit is ignored; several ranges are answered with the whole file, decisions.md).
    The unit is case-insensitive."""
    if not header:
        return None
    unit, sep, spec = header.strip().partition("=")
    if not sep or unit.strip().lower() != "bytes":
        return None
    if "," in spec:
        return None
    match = _RANGE.fullmatch(spec)
    if match is None:
        raise _unsatisfiable(size)
    first, last = (g.lstrip("0")[:_MAX_DIGITS] or g[:1] for g in match.groups())
    if first == "" and last == "":
        raise _unsatisfiable(size)
    if first == "":
        length = int(last)
        if length == 0 or size == 0:
            raise _unsatisfiable(size)
        return max(0, size - length), size - 1
    start = int(first)
    end = size - 1 if last == "" else min(int(last), size - 1)
    if start >= size or (last != "" and int(last) < start):
        raise _unsatisfiable(size)
    return start, end


def _canonical_range(
    request: web.Request, size: int, tag: str | None = None
) -> web.BaseRequest | None:
    """The request as aiohttp must see it: its Range judged already, and without the
    conditionals when the ETag is ours, ``tag`` (aiohttp would compare them with its
    own); an If-Range naming another tag asks for the whole file."""
    header = request.headers.get("Range")
    wish = "If-Range" in request.headers
    if tag is not None and any(h in request.headers for h in _CONDITIONALS):
        if_range = request.headers.get("If-Range")
        if if_range is not None and not matches(if_range, tag, strong=True):
            header = None
        headers = request.headers.copy()
        for name in _CONDITIONALS:
            headers.popall(name, None)
        if header is None:
            headers.popall("Range", None)
        request = request.clone(headers=headers)
    if header is None:
        return request if tag is not None else None
    try:
        span = parse_range(header, size)
    except errors.RangeNotSatisfiable:
        if not wish:
            raise
        span = None  # a range sent with If-Range is only a wish; the whole file answers it
    headers = request.headers.copy()
    del headers["Range"]
    if span is not None:
        headers["Range"] = f"bytes={span[0]}-{span[1]}"
    return request.clone(headers=headers)


#: Judged in send_file against Stowage's own ETag (aiohttp would compare its own tag).
_CONDITIONALS = (
    "If-None-Match",
    "If-Match",
    "If-Modified-Since",
    "If-Unmodified-Since",
    "If-Range",
)


def _unsatisfiable(size: int) -> errors.RangeNotSatisfiable:
    error = errors.RangeNotSatisfiable(size=size)
    error.headers["Content-Range"] = f"bytes */{size}"
    return error


def _etag_matches(header: str | None, etag: str) -> bool:
    """If-None-Match's weak comparison."""
    return header is not None and matches(header, etag)


async def send_file(
    request: web.Request,
    plan: Download,
    headers_for: Callable[[Download], dict[str, str]],
    registry: VersionRows | None,
    etag: str | None = None,
) -> web.StreamResponse:
    """Sends a download. With ``registry`` the bytes are those of the handle's row version
    or a newer one (re-read on a race); without it, the object at the plan's key as it is
    (derivatives: immutable objects with no row of their own, named by ``etag`` when the
    key alone does not name the bytes). A local file is opened first (``pinned``)."""
    if PIPED_HEADER in request.headers:  # the edge cache passes this answer on untouched
        headers_for = _without_edge_headers(headers_for)
    if plan.local_path is None:
        return await _checked(request, plan, headers_for, registry, etag, None)
    plan, fd = await pinned(plan, registry)
    try:
        return await _checked(request, plan, headers_for, registry, etag, fd)
    except BaseException:
        os.close(fd)
        raise


async def _checked(
    request: web.Request,
    plan: Download,
    headers_for: Callable[[Download], dict[str, str]],
    registry: VersionRows | None,
    etag: str | None,
    fd: int | None,
) -> web.StreamResponse:
    """The conditionals judged against the version to send, then its answer."""
    tag = etag or (content_etag(plan.record) if registry is not None else derivative_etag(plan))
    # A derivative's URL gives new bytes after its file is overwritten: judged alike.
    if not _if_match(request, tag):
        raise errors.PreconditionFailed("If-Match: the file has changed", etag=tag)
    if not _unmodified_since(request, plan):
        raise errors.PreconditionFailed("If-Unmodified-Since: the file has changed since")
    if "If-Modified-Since" in request.headers:  # judged on the object's own time
        plan = await reading.stated(plan)
    none_match = fieldlines.joined(request.headers, "If-None-Match")
    if _etag_matches(none_match, tag) or dates.not_modified_since(request, plan.info.modified):
        if fd is not None:
            os.close(fd)
        return web.Response(status=304, headers=_version_headers(headers_for(plan), plan, tag))
    if fd is not None:
        # The same Range rules as streamed providers: aiohttp's own answer `bytes=-0` with a
        # 206, a multi-range or `Bytes=` with an empty 416; it sees only a canonical range.
        # aiohttp fstats the file it opened: the length describes the bytes it sends.
        canonical = _canonical_range(request, plan.info.size, tag)
        response = StoredFileResponse(
            f"/proc/self/fd/{fd}", chunk_size=256 * 1024, headers=headers_for(plan)
        )
        response.content_etag, response.canonical = tag, canonical
        response.pin(fd)  # last: from here the response closes it
        return response
    return await _stream(request, plan, headers_for, registry, tag)


def _unmodified_since(request: web.Request, plan: Download) -> bool:
    """If-Unmodified-Since, judged only without If-Match (RFC 9110, 13.2.2); a date that
    cannot be read is ignored, as the RFC asks."""
    header = request.headers.get("If-Unmodified-Since")
    if header is None or "If-Match" in request.headers:
        return True
    try:
        since = email.utils.parsedate_to_datetime(header).timestamp()
    except (TypeError, ValueError, IndexError):
        return True
    return dates.modified_second(_modified(plan)) <= since  # rounded up: a same-second write fails


def _if_match(request: web.Request, tag: str) -> bool:
    header = fieldlines.joined(request.headers, "If-Match")
    return header is None or matches(header, tag, strong=True)


def derivative_etag(plan: Download) -> str:
    """A derivative's ETag: its cache key names the source's version and content hash and
    the normalised chain (and the format), so it names these bytes and no other
    derivative's. (A stored file's cache mtime and size do not: results of one size made
    at once shared a tag, and If-None-Match with one answered 304 for another URL.)"""
    return hashlib.sha256(plan.record.key.encode()).hexdigest()[:32]


async def _stream(
    request: web.Request,
    plan: Download,
    headers_for: Callable[[Download], dict[str, str]],
    registry: VersionRows | None,
    tag: str | None = None,
) -> web.StreamResponse:
    if "If-None-Match" in request.headers and tag is None:  # asks the store first
        plan = await reading.stated(plan)
    current = tag or plan.info.etag.strip('"')
    if _etag_matches(fieldlines.joined(request.headers, "If-None-Match"), current):
        return web.Response(status=304, headers=_version_headers(headers_for(plan), plan, tag))
    range_header = request.headers.get("Range")

    # Opened (first chunk read) before any header is sent: they describe these bytes, and a
    # delete racing the read is still a JSON 404.
    def wanted(size: int) -> tuple[int, int] | None:
        return parse_range(range_header, size)

    ranged = None if range_header is None else wanted  # None: a whole read, one request
    body = request.method != "HEAD"
    if registry is None:
        record = plan.record
        opened = await reading.open_current(
            plan.provider, record.container, record.key, ranged, body
        )
        plan = dataclasses.replace(plan, info=opened.info)
    else:
        plan, opened = await reading.open_download(registry, plan, ranged, body=body)
        tag = content_etag(plan.record)  # the row version actually read
    info, span = plan.info, opened.span
    response = web.StreamResponse(
        status=206 if span else 200, headers=_version_headers(headers_for(plan), plan, tag)
    )
    start, end = span or (0, info.size - 1)
    if span:
        response.headers["Content-Range"] = f"bytes {start}-{end}/{info.size}"
    response.content_length = end - start + 1 if info.size else 0
    try:
        await response.prepare(request)
        async for chunk in opened.chunks:
            await response.write(chunk)
    finally:
        await reading.close(opened.chunks)
    await response.write_eof()
    return response


def _without_edge_headers(
    headers_for: Callable[[Download], dict[str, str]],
) -> Callable[[Download], dict[str, str]]:
    return lambda plan: without_edge_headers(headers_for(plan))


def _version_headers(
    headers: dict[str, str], plan: Download, tag: str | None = None
) -> dict[str, str]:
    etag = tag or plan.info.etag.strip('"')
    return {
        **headers,
        "ETag": f'"{etag}"',
        "Last-Modified": dates.last_modified(_modified(plan)),
    }


def _modified(plan: Download) -> float:
    """The version's time; the row's upload time where the store gives none (0)."""
    return plan.info.modified or plan.record.uploaded / 1000
