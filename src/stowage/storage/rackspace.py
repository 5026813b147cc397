"""Rackspace Cloud Files provider: the OpenStack Swift object API, spoken with aiohttp.

Login: ``POST <identity_url>/tokens`` with ``username`` + ``api_key``
(``RAX-KSKEY:apiKeyCredentials``). The account URL is the ``cloudFiles``
endpoint of ``region`` in the service catalogue (``publicURL``, or
``internalURL`` when ``internal`` is true; ``region`` defaults to the user's
default region). The token is renewed shortly before the expiry the identity
service announced, and once more when Swift answers 401.

Writes: a source that ends within ``inline_limit`` bytes (default 8 MiB, held
in memory) is one plain PUT. A longer one is streamed, chunked-encoded, into
segments of at most ``segment_size`` bytes (default 1 GiB) under
``<key>/<upload id>/`` in the ``<container>_segments`` container (created on
demand) and joined by a static large object (SLO) manifest, whose PUT is the
atomic switch. A write that fails deletes the segments it made; the previous
object stays as it was. Overwriting an SLO deletes its old segments once the new
object is in place; ``delete`` removes an SLO together with its segments.
Reads stream, with byte ranges.

A crash mid-write leaves orphan segments; ``sweep_temporary`` deletes those of
uploads older than ``orphan_age`` (default one day) that no manifest uses.

Limits: a reader streaming an SLO while it is overwritten may fail once its
old segments are gone. Objects are capped at ``max_segments``
(default 1000, Swift's own default) x ``segment_size``. The target container
must exist. ``WriteOptions.access`` is ignored: Cloud Files makes whole
containers public (CDN), not single objects. Each write may hold up to
``inline_limit`` bytes in memory.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any, NoReturn, TypeVar
from urllib.parse import quote

import aiohttp
from yarl import URL

from stowage import errors
from stowage.storage.base import Chunks, ObjectInfo, WriteOptions

log = logging.getLogger(__name__)
T = TypeVar("T")

READ_CHUNK = 256 * 1024
PIECE = 1024 * 1024
SEGMENTS_SUFFIX = "_segments"
DEFAULT_SEGMENT_SIZE = 1024**3
DEFAULT_INLINE_LIMIT = 8 * 1024**2
# Swift's default max_manifest_segments.
DEFAULT_MAX_SEGMENTS = 1000
# Longer than any upload should take: younger segments may belong to a write in progress.
DEFAULT_ORPHAN_AGE = 24 * 3600.0
LISTING_PAGE = 1000


@dataclass(frozen=True)
class RackspaceSettings:
    identity_url: str
    username: str
    api_key: str = field(repr=False)
    container: str
    region: str | None = None
    internal: bool = False
    segment_size: int = DEFAULT_SEGMENT_SIZE
    inline_limit: int = DEFAULT_INLINE_LIMIT
    max_segments: int = DEFAULT_MAX_SEGMENTS
    orphan_age: float = DEFAULT_ORPHAN_AGE
    connect_timeout: float = 10.0
    read_timeout: float = 300.0

    @property
    def tokens_url(self) -> str:
        base = self.identity_url.rstrip("/")
        return base if base.endswith("/tokens") else f"{base}/tokens"


@dataclass(frozen=True)
class Login:
    token: str = field(repr=False)
    storage_url: str
    renew_at: float  # time.monotonic() deadline


@dataclass
class Segment:
    name: str
    etag: str
    size: int


class RackspaceProvider:
    location = "rackspace"
    supports_containers = True

    def __init__(self, settings: RackspaceSettings) -> None:
        self.settings = settings
        self.default_container = settings.container
        self._http: aiohttp.ClientSession | None = None
        self._login: Login | None = None
        self._login_lock = asyncio.Lock()
        self._made_containers: set[str] = set()

    # -- the Provider interface --------------------------------------------------

    async def write(
        self, container: str, key: str, chunks: Chunks, options: WriteOptions
    ) -> ObjectInfo:
        source = _Source(chunks)
        inline_limit = min(self.settings.inline_limit, self.settings.segment_size)
        head = await source.read_head(inline_limit)
        if head is not None:
            return await self._replace(
                container, key, lambda: self._put_plain(container, key, head, options), []
            )
        segments = await self._upload_segments(container, key, source)
        return await self._replace(
            container, key, lambda: self._put_manifest(container, key, segments, options), segments
        )

    async def open(
        self,
        container: str,
        key: str,
        start: int = 0,
        end: int | None = None,
        version: str | None = None,
    ) -> AsyncIterator[bytes]:
        headers: dict[str, str] = {}
        if start or end is not None:
            headers["Range"] = f"bytes={start}-{'' if end is None else end}"
        if version is not None:
            headers["If-Match"] = f'"{version}"'
        async with self._request("GET", _path(container, key), headers=headers) as resp:
            if version is not None and (
                resp.status == 412 or (resp.status < 300 and _etag(resp) != version)
            ):
                raise errors.StorageVersionChanged("rackspace: the object was replaced")
            _expect(resp, 200, 206)
            try:
                async for chunk in resp.content.iter_chunked(READ_CHUNK):
                    yield chunk
            except (aiohttp.ClientError, TimeoutError) as exc:
                raise errors.StorageUnavailable("rackspace: read interrupted") from exc

    async def open_whole(self, container: str, key: str) -> AsyncIterator[ObjectInfo | bytes]:
        # One GET: its headers are the stat of the version its body is (for a large object,
        # the manifest's, as a HEAD would say).
        async with self._request("GET", _path(container, key)) as resp:
            _expect(resp, 200)
            if resp.content_length is None:  # never from Swift; no guess at a length
                raise errors.StorageError("rackspace: a GET answered without a length")
            yield _info(resp, resp.content_length)
            try:
                async for chunk in resp.content.iter_chunked(READ_CHUNK):
                    yield chunk
            except (aiohttp.ClientError, TimeoutError) as exc:
                raise errors.StorageUnavailable("rackspace: read interrupted") from exc

    async def stat(self, container: str, key: str) -> ObjectInfo:
        async with self._request("HEAD", _path(container, key)) as resp:
            _expect(resp, 200, 204)
            return _info(resp, int(resp.headers.get("Content-Length") or 0))

    async def delete(self, container: str, key: str) -> None:
        path = _path(container, key)
        async with self._request("HEAD", path) as resp:
            _expect(resp, 200, 204)
            large = _is_slo(resp)
        if not large:
            async with self._request("DELETE", path) as resp:
                _expect(resp, 204)
            return
        # Swift deletes the segments first, then the manifest, and reports in the body.
        path += "?multipart-manifest=delete"
        async with self._request("DELETE", path, headers={"Accept": "application/json"}) as resp:
            _expect(resp, 200)
            _check_bulk_delete(await resp.json(content_type=None))

    async def sweep_temporary(self) -> int:
        """Delete segments of uploads older than ``orphan_age`` that no manifest uses."""
        removed = 0
        async for store in self._names(""):
            if store.endswith(SEGMENTS_SUFFIX):
                removed += await self._sweep_store(store)
        return removed

    async def keys(self, container: str, prefix: str) -> AsyncIterator[str]:
        async for name in self._names(_path(container), prefix):
            yield name

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None

    # -- writing -------------------------------------------------------------------

    async def _replace(
        self,
        container: str,
        key: str,
        put: Callable[[], Awaitable[ObjectInfo]],
        new_segments: list[Segment],
    ) -> ObjectInfo:
        """Run ``put`` (the atomic switch), then delete the segments of the object it replaced."""
        try:
            old = await self._own_segments(container, key)
            info = await put()
        except BaseException as exc:
            # When the outcome of the PUT is unknown, its segments may already be in use.
            if not _ambiguous(exc):
                await self._discard(container, new_segments)
            raise
        await self._discard(container, old)
        return info

    async def _put_plain(
        self, container: str, key: str, data: bytes, options: WriteOptions
    ) -> ObjectInfo:
        headers = {"Content-Type": options.content_type}
        async with self._request("PUT", _path(container, key), headers=headers, data=data) as resp:
            _expect_put(resp, container)
            return _info(resp, len(data))

    async def _upload_segments(self, container: str, key: str, source: _Source) -> list[Segment]:
        store = container + SEGMENTS_SUFFIX
        prefix = f"{key}/{int(time.time())}-{secrets.token_hex(6)}/"
        segments: list[Segment] = []
        try:
            await self._ensure_container(store)
            while not await source.at_eof():
                if len(segments) >= self.settings.max_segments:
                    raise errors.StorageFull(
                        f"rackspace: object exceeds {self.settings.max_segments} segments"
                    )
                name = f"{prefix}{len(segments):08d}"
                segments.append(await self._put_segment(store, name, source))
        except BaseException:
            await self._discard(container, segments)
            raise
        return segments

    async def _put_segment(self, store: str, name: str, source: _Source) -> Segment:
        body = _SegmentBody(source, self.settings.segment_size)
        headers = {"Content-Type": "application/octet-stream"}
        async with self._request("PUT", _path(store, name), headers=headers, data=body) as resp:
            _expect_put(resp, store)
            return Segment(name, _etag(resp), body.sent)

    async def _put_manifest(
        self, container: str, key: str, segments: list[Segment], options: WriteOptions
    ) -> ObjectInfo:
        store = container + SEGMENTS_SUFFIX
        manifest = [
            {"path": f"/{store}/{s.name}", "etag": s.etag, "size_bytes": s.size} for s in segments
        ]
        path = _path(container, key) + "?multipart-manifest=put"
        headers = {"Content-Type": options.content_type}
        data = json.dumps(manifest).encode()
        async with self._request("PUT", path, headers=headers, data=data) as resp:
            _expect_put(resp, container)
            return _info(resp, sum(s.size for s in segments))

    async def _ensure_container(self, container: str) -> None:
        if container in self._made_containers:
            return
        async with self._request("PUT", _path(container)) as resp:
            _expect(resp, 201, 202, 204)
        self._made_containers.add(container)

    async def _own_segments(self, container: str, key: str) -> list[Segment]:
        """The segments this provider made for the SLO now stored at ``key``, if it is one."""
        path = _path(container, key)
        async with self._request("HEAD", path) as resp:
            if resp.status == 404:
                return []
            _expect(resp, 200, 204)
            if not _is_slo(resp):
                return []
        async with self._request("GET", path + "?multipart-manifest=get") as resp:
            if resp.status == 404:
                return []
            _expect(resp, 200)
            listing = await resp.json(content_type=None)
        mine = f"/{container}{SEGMENTS_SUFFIX}/{key}/"
        return [
            Segment(item["name"][len(f"/{container}{SEGMENTS_SUFFIX}/") :], "", 0)
            for item in listing
            if str(item.get("name", "")).startswith(mine)
        ]

    async def _sweep_store(self, store: str) -> int:
        container = store[: -len(SEGMENTS_SUFFIX)]
        cutoff = time.time() - self.settings.orphan_age
        removed = 0
        group: list[Segment] = []
        # Listings are sorted, so the segments of one upload are contiguous.
        async for name in self._names(_path(store)):
            if group and _upload_of(group[0].name) != _upload_of(name):
                removed += await self._sweep_upload(container, group, cutoff)
                group = []
            group.append(Segment(name, "", 0))
        if group:
            removed += await self._sweep_upload(container, group, cutoff)
        return removed

    async def _sweep_upload(self, container: str, group: list[Segment], cutoff: float) -> int:
        upload = _upload_of(group[0].name)
        if upload is None or upload[1] >= cutoff:
            return 0
        in_use = {s.name for s in await self._own_segments(container, upload[0])}
        if in_use & {s.name for s in group}:
            return 0
        await self._discard(container, group)
        return len(group)

    async def _names(self, path: str, prefix: str = "") -> AsyncIterator[str]:
        """Every name in an account (``path`` "") or container listing, page by page."""
        marker = ""
        while True:
            query = f"?format=json&limit={LISTING_PAGE}&marker={quote(marker, safe='')}"
            if prefix:
                query += f"&prefix={quote(prefix, safe='')}"
            async with self._request("GET", path + query) as resp:
                _expect(resp, 200, 204)
                page = await resp.json(content_type=None) if resp.status == 200 else []
            for item in page:
                yield str(item["name"])
            if len(page) < LISTING_PAGE:
                return
            marker = str(page[-1]["name"])

    async def _discard(self, container: str, segments: list[Segment]) -> None:
        """Best effort: a segment left behind wastes space but breaks nothing."""
        store = container + SEGMENTS_SUFFIX
        for segment in segments:
            try:
                async with self._request("DELETE", _path(store, segment.name)) as resp:
                    if resp.status not in (204, 404):
                        log.warning("rackspace: segment delete answered %s", resp.status)
            except errors.StorageError as exc:
                log.warning("rackspace: could not delete a segment: %s", exc.message)

    # -- HTTP, login ---------------------------------------------------------------

    def _client(self) -> aiohttp.ClientSession:
        if self._http is None or self._http.closed:
            timeout = aiohttp.ClientTimeout(
                total=None,
                sock_connect=self.settings.connect_timeout,
                sock_read=self.settings.read_timeout,
            )
            self._http = aiohttp.ClientSession(timeout=timeout, auto_decompress=False)
        return self._http

    @asynccontextmanager
    async def _request(
        self,
        method: str,
        path: str,
        headers: Mapping[str, str] | None = None,
        data: bytes | _SegmentBody | None = None,
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        for attempt in (1, 2):
            login = await self._current_login()
            resp = await self._send(login, method, path, headers, data)
            if resp.status == 401 and attempt == 1 and not _consumed(data):
                resp.release()
                self._forget(login)
                continue
            try:
                yield resp
            finally:
                resp.release()
            return

    async def _send(
        self,
        login: Login,
        method: str,
        path: str,
        headers: Mapping[str, str] | None,
        data: bytes | _SegmentBody | None,
    ) -> aiohttp.ClientResponse:
        url = URL(login.storage_url + path, encoded=True)
        all_headers = {"X-Auth-Token": login.token, **(headers or {})}
        streamed = isinstance(data, _SegmentBody)
        # With 100-continue a 401 (or 404) comes back before any body byte is sent,
        # so the unconsumed stream can be sent again after a new login.
        body = data.chunks() if isinstance(data, _SegmentBody) else data
        try:
            return await self._client().request(
                method, url, headers=all_headers, data=body, expect100=streamed
            )
        except (aiohttp.ClientError, TimeoutError) as exc:
            if isinstance(data, _SegmentBody) and data.source.error is not None:
                raise data.source.error from None
            raise errors.StorageUnavailable(f"rackspace: {type(exc).__name__}") from exc

    async def _current_login(self) -> Login:
        async with self._login_lock:
            if self._login is None or time.monotonic() >= self._login.renew_at:
                self._login = await self._authenticate()
            return self._login

    def _forget(self, login: Login) -> None:
        if self._login is login:
            self._login = None

    async def _authenticate(self) -> Login:
        s = self.settings
        body = {
            "auth": {"RAX-KSKEY:apiKeyCredentials": {"username": s.username, "apiKey": s.api_key}}
        }
        try:
            async with self._client().post(
                s.tokens_url, json=body, headers={"Accept": "application/json"}
            ) as resp:
                if resp.status in (401, 403):
                    raise errors.StorageAccessDenied("rackspace: login refused (username/api_key)")
                _expect(resp, 200, 203)
                doc = await resp.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise errors.StorageUnavailable(f"rackspace identity: {type(exc).__name__}") from exc
        except ValueError as exc:
            raise errors.StorageError("rackspace identity: reply is not JSON") from exc
        return parse_access(doc, s.region, s.internal)


def parse_access(doc: Any, region: str | None, internal: bool) -> Login:
    """Token, account URL and renewal time from an identity ``access`` reply."""
    try:
        access = doc["access"]
        token = str(access["token"]["id"])
        expires = datetime.fromisoformat(access["token"]["expires"].replace("Z", "+00:00"))
        region = region or access.get("user", {}).get("RAX-AUTH:defaultRegion")
        catalog = access["serviceCatalog"]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise errors.StorageError("rackspace identity: unexpected reply") from exc
    lifetime = expires.timestamp() - time.time()
    renew_at = time.monotonic() + lifetime - min(60.0, max(lifetime, 0) / 10)
    return Login(token, _endpoint(catalog, region, internal), renew_at)


def _endpoint(catalog: Any, region: str | None, internal: bool) -> str:
    wanted = "internalURL" if internal else "publicURL"
    for service in catalog:
        if service.get("name") != "cloudFiles" and service.get("type") != "object-store":
            continue
        for endpoint in service.get("endpoints", []):
            same_region = str(endpoint.get("region", "")).upper() == (region or "").upper()
            if region and same_region and endpoint.get(wanted):
                return str(endpoint[wanted]).rstrip("/")
    raise errors.StorageMisconfigured(f"rackspace: no Cloud Files {wanted} for region {region!r}")


class _Source:
    """The caller's chunks, re-cut to size; remembers an error the caller's iterator raised."""

    def __init__(self, chunks: Chunks) -> None:
        self._it = chunks.__aiter__()
        self._pending = memoryview(b"")
        self._eof = False
        self.error: BaseException | None = None

    async def at_eof(self) -> bool:
        while not self._pending and not self._eof:
            try:
                chunk = await self._it.__anext__()
            except StopAsyncIteration:
                self._eof = True
            except BaseException as exc:
                self.error = exc
                raise
            else:
                self._pending = memoryview(chunk)
        return not self._pending

    async def take(self, limit: int) -> bytes:
        """Up to ``limit`` bytes (at most one piece); b"" at the end."""
        if await self.at_eof():
            return b""
        n = min(limit, PIECE, len(self._pending))
        piece, self._pending = self._pending[:n], self._pending[n:]
        return bytes(piece)

    async def read_head(self, limit: int) -> bytes | None:
        """The whole source if it is at most ``limit`` bytes; else None, nothing consumed."""
        head = bytearray()
        while len(head) <= limit and not await self.at_eof():
            head += await self.take(limit + 1 - len(head))
        if len(head) <= limit:
            return bytes(head)
        self._pending = memoryview(bytes(head) + bytes(self._pending))
        return None


class _SegmentBody:
    """At most ``limit`` bytes of a source, streamed once."""

    def __init__(self, source: _Source, limit: int) -> None:
        self.source = source
        self.limit = limit
        self.sent = 0
        self.started = False

    async def chunks(self) -> AsyncIterator[bytes]:
        self.started = True
        while self.sent < self.limit:
            piece = await self.source.take(self.limit - self.sent)
            if not piece:
                return
            self.sent += len(piece)
            yield piece


def _ambiguous(exc: BaseException) -> bool:
    """True when a request may have reached the store although it failed here."""
    if isinstance(exc, asyncio.CancelledError):
        return True
    cause = exc.__cause__
    return isinstance(exc, errors.StorageUnavailable) and isinstance(
        cause, aiohttp.ClientError | TimeoutError
    )


def _consumed(data: bytes | _SegmentBody | None) -> bool:
    return isinstance(data, _SegmentBody) and data.started


def _path(container: str, key: str | None = None) -> str:
    path = "/" + quote(container, safe="")
    return path if key is None else f"{path}/{quote(key, safe='/')}"


def _upload_of(segment: str) -> tuple[str, float] | None:
    """(key, start time) of the upload a segment name belongs to; None if not one of ours."""
    parts = segment.rsplit("/", 2)
    if len(parts) != 3 or not parts[2].isdigit():
        return None
    started, _, tag = parts[1].partition("-")
    if not started.isdigit() or not tag:
        return None
    return parts[0], float(started)


def _is_slo(resp: aiohttp.ClientResponse) -> bool:
    return resp.headers.get("X-Static-Large-Object", "").lower() == "true"


def _etag(resp: aiohttp.ClientResponse) -> str:
    return resp.headers.get("Etag", "").strip('"')


def _info(resp: aiohttp.ClientResponse, size: int) -> ObjectInfo:
    modified = time.time()
    if stamp := resp.headers.get("X-Timestamp"):
        modified = float(stamp)
    elif last := resp.headers.get("Last-Modified"):
        modified = parsedate_to_datetime(last).timestamp()
    return ObjectInfo(size, _etag(resp), modified)


def _check_bulk_delete(report: Any) -> None:
    status = str(report.get("Response Status", "200"))
    if status.startswith("404"):
        raise errors.StorageNotFound("rackspace: object not found")
    if not status.startswith("2") or report.get("Errors"):
        raise errors.StorageError(f"rackspace: large object delete failed ({status})")


def _expect_put(resp: aiohttp.ClientResponse, container: str) -> None:
    if resp.status == 404:
        raise errors.StorageNotFound(f"rackspace: container {container!r} does not exist")
    _expect(resp, 201)


_STATUS_ERRORS: dict[int, type[errors.StorageError]] = {
    401: errors.StorageAccessDenied,
    403: errors.StorageAccessDenied,
    404: errors.StorageNotFound,
    409: errors.StorageConflict,
    412: errors.StorageConflict,
    413: errors.StorageFull,
    507: errors.StorageFull,
}


def _expect(resp: aiohttp.ClientResponse, *ok: int) -> None:
    if resp.status in ok:
        return
    _raise_for(resp)


def _raise_for(resp: aiohttp.ClientResponse) -> NoReturn:
    message = f"rackspace: {resp.method} answered {resp.status} {resp.reason or ''}".strip()
    if resp.status == 416:
        raise errors.RangeNotSatisfiable()
    cls = _STATUS_ERRORS.get(resp.status)
    if cls is None:
        cls = errors.StorageUnavailable if resp.status >= 500 else errors.StorageError
    raise cls(message)


def from_config(config: Mapping[str, Any], data_dir: Path) -> RackspaceProvider:
    missing = [k for k in ("identity_url", "username", "api_key", "container") if not config.get(k)]
    if missing:
        raise errors.StorageMisconfigured(f"rackspace: missing settings {', '.join(missing)}")
    settings = RackspaceSettings(
        identity_url=str(config["identity_url"]),
        username=str(config["username"]),
        api_key=str(config["api_key"]),
        container=str(config["container"]),
        region=str(config["region"]) if config.get("region") else None,
        internal=bool(config.get("internal", False)),
        segment_size=_setting(config, "segment_size", int, DEFAULT_SEGMENT_SIZE),
        inline_limit=_setting(config, "inline_limit", int, DEFAULT_INLINE_LIMIT),
        max_segments=_setting(config, "max_segments", int, DEFAULT_MAX_SEGMENTS),
        orphan_age=_setting(config, "orphan_age", float, DEFAULT_ORPHAN_AGE),
        connect_timeout=_setting(config, "connect_timeout", float, 10.0),
        read_timeout=_setting(config, "read_timeout", float, 300.0),
    )
    if settings.segment_size < 1 or settings.inline_limit < 0 or settings.max_segments < 1:
        raise errors.StorageMisconfigured("rackspace: segment_size and max_segments must be > 0")
    return RackspaceProvider(settings)


def _setting(config: Mapping[str, Any], name: str, kind: Callable[[Any], T], default: T) -> T:
    value = config.get(name)
    return default if value is None else kind(value)
