"""Google Cloud Storage provider, over the JSON API with aiohttp.

Writes use a resumable upload session: the stream is cut into ``chunk_size``
pieces (a multiple of 256 KiB, default 8 MiB) sent one at a time, so memory
stays at about one chunk whatever the object size. The object only appears
when the final piece is sent; if the source or the network fails first, the
session is cancelled and the previous object at that key stays unchanged.
Reads stream ``alt=media`` downloads, with a ``Range`` header for byte ranges.

Config: ``bucket`` (required), ``project`` (informational), ``credentials``
(service-account JSON as a dict, or the path of its file), or
``anonymous: true`` (emulators, public buckets); with neither, Application
Default Credentials are used. ``endpoint_url`` points at an emulator,
``chunk_size`` sets the upload piece size, ``timeout`` the seconds allowed for
connecting and for each read. ``public_acl: false`` ignores ``access=public``
(needed on buckets with uniform bucket-level access, where object ACLs are
refused).

A piece that fails transiently (connection lost, 429, 5xx) is resumed from
what the server says it holds, up to ``retries`` times per write (default 3,
waiting ``retry_backoff`` seconds, doubled each time). Other requests are not
retried: they fail at once with ``StorageUnavailable``.

Limits: bucket creation and listing are not done here.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp

from stowage import errors
from stowage.storage.base import WRITE_MIN_RATE, Chunks, ObjectInfo, WriteOptions
from stowage.storage.settings import GcsSettings, parse
from stowage.storage.status import error_for

DEFAULT_ENDPOINT = "https://storage.googleapis.com"
SCOPES = ["https://www.googleapis.com/auth/devstorage.read_write"]
GRANULE = 256 * 1024  # resumable pieces must be multiples of this, except the last
DEFAULT_CHUNK = 8 * 1024 * 1024
READ_CHUNK = 256 * 1024


class _Tokens:
    """Bearer tokens from google-auth credentials, refreshed off the event loop."""

    def __init__(self, credentials: Any) -> None:
        self.credentials = credentials
        self.lock = asyncio.Lock()

    async def header(self) -> dict[str, str]:
        async with self.lock:
            if not self.credentials.valid:
                await asyncio.get_running_loop().run_in_executor(None, self._refresh)
        return {"Authorization": f"Bearer {self.credentials.token}"}

    def _refresh(self) -> None:
        import google.auth.exceptions
        import google.auth.transport.requests

        try:
            self.credentials.refresh(google.auth.transport.requests.Request())
        except google.auth.exceptions.TransportError as exc:
            raise errors.StorageUnavailable("gcs: cannot reach the token endpoint") from exc
        except google.auth.exceptions.GoogleAuthError as exc:
            raise errors.StorageAccessDenied("gcs: credentials were refused") from exc


class GcsProvider:
    location = "gcs"
    supports_containers = True

    def __init__(
        self,
        bucket: str,
        *,
        tokens: _Tokens | None,
        endpoint_url: str = DEFAULT_ENDPOINT,
        chunk_size: int = DEFAULT_CHUNK,
        timeout: float = 30.0,
        public_acl: bool = True,
        retries: int = 3,
        retry_backoff: float = 0.5,
    ) -> None:
        if chunk_size <= 0 or chunk_size % GRANULE:
            raise errors.StorageMisconfigured("gcs: chunk_size must be a multiple of 256 KiB")
        self.default_container = bucket
        self.tokens = tokens
        self.endpoint = endpoint_url.rstrip("/")
        self.chunk_size = chunk_size
        self.public_acl = public_acl
        self.retries = retries
        self.retry_backoff = retry_backoff
        self.timeout = aiohttp.ClientTimeout(
            total=None, connect=timeout, sock_connect=timeout, sock_read=timeout
        )
        self._session: aiohttp.ClientSession | None = None

    # -- the Provider interface -------------------------------------------------

    async def write(
        self, container: str, key: str, chunks: Chunks, options: WriteOptions
    ) -> ObjectInfo:
        session_url = await self._start_upload(container, key, options)
        try:
            resource = await self._send_pieces(session_url, chunks)
        except BaseException:
            await asyncio.shield(self._cancel_upload(session_url))
            raise
        return _info(resource)

    async def open(
        self,
        container: str,
        key: str,
        start: int = 0,
        end: int | None = None,
        version: str | None = None,
    ) -> Chunks:
        headers: dict[str, str] = {}
        if start or end is not None:
            headers["Range"] = f"bytes={start}-{'' if end is None else end}"
        url = f"{self._object_url(container, key)}?alt=media"
        pin = _Pin.parse(version) if version is not None else None
        if pin is not None and pin.generation:
            url += f"&ifGenerationMatch={pin.generation}"
        async with self._request("GET", url, headers=headers) as resp:
            if pin is not None and (resp.status == 412 or not pin.matches(resp)):
                raise errors.StorageVersionChanged("gcs: the object was replaced")
            await _check(resp, f"{container}/{key}")
            if headers and resp.status != 206:
                raise errors.StorageError("gcs: the server ignored the byte range")
            with _network_errors():
                async for chunk in resp.content.iter_chunked(READ_CHUNK):
                    yield chunk

    async def stat(self, container: str, key: str) -> ObjectInfo:
        async with self._request("GET", self._object_url(container, key)) as resp:
            await _check(resp, f"{container}/{key}")
            with _network_errors():
                return _info(await resp.json(content_type=None))

    async def delete(self, container: str, key: str) -> None:
        async with self._request("DELETE", self._object_url(container, key)) as resp:
            await _check(resp, f"{container}/{key}")

    async def keys(self, container: str, prefix: str) -> AsyncIterator[str]:
        url = f"{self.endpoint}/storage/v1/b/{quote(container, safe='')}/o"
        params = {"prefix": prefix, "fields": "items(name),nextPageToken"}
        while True:
            async with self._request("GET", url, params=params) as resp:
                await _check(resp, container)
                with _network_errors():
                    page = await resp.json(content_type=None)
            for item in page.get("items", []):
                yield str(item["name"])
            if not page.get("nextPageToken"):
                return
            params["pageToken"] = str(page["nextPageToken"])

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    # -- resumable upload ---------------------------------------------------------

    async def _start_upload(self, container: str, key: str, options: WriteOptions) -> str:
        params = {"uploadType": "resumable", "name": key}
        if options.access == "public" and self.public_acl:
            params["predefinedAcl"] = "publicRead"
        url = f"{self.endpoint}/upload/storage/v1/b/{quote(container, safe='')}/o"
        body = json.dumps({"name": key, "contentType": options.content_type})
        headers = {
            "Content-Type": "application/json; charset=UTF-8",
            "X-Upload-Content-Type": options.content_type,
        }
        async with self._request("POST", url, params=params, data=body, headers=headers) as resp:
            if resp.status == 404:
                raise errors.StorageMisconfigured(f"gcs: bucket {container!r} does not exist")
            await _check(resp, f"{container}/{key}")
            location = resp.headers.get("Location")
        if not location:
            raise errors.StorageError("gcs: the upload session has no location")
        return str(location)

    async def _send_pieces(self, session_url: str, chunks: Chunks) -> dict[str, Any]:
        upload = _Upload(self, session_url)
        buffer = bytearray()
        async for chunk in chunks:
            buffer += chunk
            # Strictly greater: the last piece must carry data, so the stream's end is known
            # before a full piece goes out.
            while len(buffer) > self.chunk_size:
                kept = await upload.piece(_head(buffer, self.chunk_size))
                del buffer[:kept]
        return await upload.finish(bytes(buffer))

    async def _put(self, session_url: str, data: bytes, content_range: str) -> int | dict[str, Any]:
        """One PUT to an upload session: the bytes now held (308) or the finished object."""
        headers = {"Content-Range": content_range}
        bound = (self.timeout.sock_read or 0) + len(data) / WRITE_MIN_RATE
        async with self._request(
            "PUT", session_url, data=data, headers=headers, timeout=bound
        ) as resp:
            if resp.status == 308:
                return _persisted(resp.headers.get("Range"))
            await _check(resp, "upload")
            with _network_errors():
                resource: dict[str, Any] = await resp.json(content_type=None)
        return resource

    async def _cancel_upload(self, session_url: str) -> None:
        # Best effort: an unfinished session never becomes an object and expires on its own.
        try:
            async with self._request("DELETE", session_url, timeout=5.0):
                pass
        except (errors.StorageError, aiohttp.ClientError, TimeoutError):
            pass

    # -- plumbing -------------------------------------------------------------------

    def _object_url(self, container: str, key: str) -> str:
        return f"{self.endpoint}/storage/v1/b/{quote(container, safe='')}/o/{quote(key, safe='')}"

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=self.timeout, auto_decompress=False)
        return self._session

    @asynccontextmanager
    async def _request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
        **kwargs: Any,
    ) -> Any:
        all_headers = dict(headers or {})
        if self.tokens is not None:
            all_headers.update(await self.tokens.header())
        extra: dict[str, Any] = {}
        if timeout is not None:
            extra["timeout"] = aiohttp.ClientTimeout(total=timeout)
        with _network_errors():
            async with self._client().request(
                method, url, headers=all_headers, **kwargs, **extra
            ) as resp:
                yield resp


class _Upload:
    """The client side of one resumable session: where it stands, and resuming after a
    transient failure from what the server says it holds (it may hold less than was sent)."""

    def __init__(self, provider: GcsProvider, url: str) -> None:
        self.provider = provider
        self.url = url
        self.offset = 0  # bytes the server holds
        self.failures = 0

    async def piece(self, data: bytes) -> int:
        """Sends an intermediate piece; returns how many of its bytes the server kept."""
        start, failures = self.offset, self.failures
        span = f"{start}-{start + len(data) - 1}"
        held = await self._send(data, f"bytes {span}/*", "bytes */*")
        if isinstance(held, dict) or not start <= held <= start + len(data):
            raise errors.StorageError("gcs: the upload session is out of step")
        if held == start and self.failures == failures:
            raise errors.StorageError("gcs: the server did not accept the upload piece")
        self.offset = held
        return held - start

    async def finish(self, data: bytes) -> dict[str, Any]:
        base = self.offset
        total = base + len(data)
        while True:
            rest = data[self.offset - base :]
            span = f"{self.offset}-{total - 1}" if rest else "*"
            before = (self.offset, self.failures)
            held = await self._send(rest, f"bytes {span}/{total}", f"bytes */{total}")
            if isinstance(held, dict):
                return held
            if not base <= held <= total or (held, self.failures) == before:
                raise errors.StorageError("gcs: the server did not complete the upload")
            self.offset = held

    async def _send(
        self, data: bytes, content_range: str, status_range: str
    ) -> int | dict[str, Any]:
        """Sends once; after a transient failure, asks the server what it holds instead."""
        try:
            return await self.provider._put(self.url, data, content_range)
        except errors.StorageUnavailable as exc:
            await self._failed(exc)
        while True:
            try:
                return await self.provider._put(self.url, b"", status_range)
            except errors.StorageUnavailable as exc:
                await self._failed(exc)

    async def _failed(self, exc: errors.StorageUnavailable) -> None:
        self.failures += 1
        if self.failures > self.provider.retries:
            raise exc
        await asyncio.sleep(self.provider.retry_backoff * 2 ** (self.failures - 1))


def from_config(config: Mapping[str, Any], data_dir: Path) -> GcsProvider:
    """The provider of a configuration table (``build`` takes settings already parsed)."""
    return build(parse(GcsSettings, config), data_dir)


def build(settings: GcsSettings, data_dir: Path) -> GcsProvider:
    return GcsProvider(
        settings.bucket,
        tokens=None if settings.anonymous else _Tokens(_credentials(settings.credentials)),
        endpoint_url=settings.endpoint_url,
        chunk_size=settings.chunk_size,
        timeout=settings.timeout,
        public_acl=settings.public_acl,
        retries=settings.retries,
        retry_backoff=settings.retry_backoff,
    )


def _credentials(source: str | Mapping[str, Any] | None) -> Any:
    import google.auth
    import google.auth.exceptions
    from google.oauth2 import service_account

    try:
        if source is None:
            credentials, _ = google.auth.default(scopes=SCOPES)
            return credentials
        info = source if isinstance(source, Mapping) else json.loads(Path(source).read_text())
        return service_account.Credentials.from_service_account_info(  # type: ignore[no-untyped-call]
            dict(info), scopes=SCOPES
        )
    except (OSError, ValueError, google.auth.exceptions.GoogleAuthError) as exc:
        # The message names the failure, never the key material.
        raise errors.StorageMisconfigured(
            f"gcs: unusable credentials ({type(exc).__name__})"
        ) from exc


def _head(buffer: bytearray, size: int) -> bytes:
    """The first ``size`` bytes, copied once."""
    with memoryview(buffer) as view:
        return bytes(view[:size])


def _persisted(range_header: str | None) -> int:
    """Bytes the server holds, from a 308 reply's ``Range: bytes=0-N`` (absent: none)."""
    if not range_header:
        return 0
    try:
        return int(range_header.rsplit("-", 1)[1]) + 1
    except (IndexError, ValueError) as exc:
        raise errors.StorageError("gcs: malformed Range in upload reply") from exc


def _info(resource: Mapping[str, Any]) -> ObjectInfo:
    etag = resource.get("etag") or resource.get("md5Hash") or resource.get("generation") or ""
    updated = resource.get("updated") or resource.get("timeCreated")
    modified = datetime.fromisoformat(updated.replace("Z", "+00:00")).timestamp() if updated else 0
    size = int(resource.get("size") or 0)
    pin = _Pin(str(resource.get("generation") or ""), size, str(resource.get("md5Hash") or ""))
    return ObjectInfo(size, str(etag), modified, pin.token())


@dataclass(frozen=True)
class _Pin:
    """A read pinned to one generation. GCS refuses another with 412 (``ifGenerationMatch``)
    and names the one it sends (``x-goog-generation``). Emulators that do neither are
    checked on what they do send: a whole read's ``x-goog-hash`` md5, a range's total size."""

    generation: str
    size: int
    md5: str

    def token(self) -> str:
        return f"{self.generation}/{self.size}/{self.md5}"

    @classmethod
    def parse(cls, token: str) -> _Pin:
        generation, _, rest = token.partition("/")
        size, _, md5 = rest.partition("/")
        return cls(generation, int(size) if size.isdigit() else -1, md5)

    def matches(self, resp: aiohttp.ClientResponse) -> bool:
        if resp.status >= 300:
            return True  # not a body of another version: _check says what it is
        sent = resp.headers.get("x-goog-generation")
        if sent is not None:
            return sent == self.generation
        hashes = resp.headers.get("x-goog-hash", "")
        md5 = next((h[4:] for h in hashes.split(",") if h.strip().startswith("md5=")), None)
        if md5 is not None and self.md5:
            return md5.strip() == self.md5
        total = resp.headers.get("Content-Range", "").rpartition("/")[2]
        return not total.isdigit() or int(total) == self.size


async def _check(resp: aiohttp.ClientResponse, what: str) -> None:
    if resp.status < 300:
        return
    detail = await _error_message(resp) if resp.status != 416 else ""
    raise error_for(resp.status, f"gcs: {resp.status} on {what}{': ' + detail if detail else ''}")


async def _error_message(resp: aiohttp.ClientResponse) -> str:
    try:
        body = await resp.json(content_type=None)
        return str(body["error"]["message"])[:200]
    except (aiohttp.ClientError, ValueError, KeyError, TypeError):
        return ""


@contextmanager
def _network_errors() -> Any:
    try:
        yield
    except (aiohttp.ClientConnectionError, TimeoutError) as exc:
        raise errors.StorageUnavailable(f"gcs: {type(exc).__name__}") from exc
    except aiohttp.ClientPayloadError as exc:
        raise errors.StorageUnavailable("gcs: the transfer broke off") from exc
    except aiohttp.ClientError as exc:
        raise errors.StorageError(f"gcs: {type(exc).__name__}") from exc
