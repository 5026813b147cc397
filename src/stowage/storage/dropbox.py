"""Dropbox provider: objects are files at ``<root>/<key>`` in one Dropbox (app folder).

Uses the official ``dropbox`` SDK, which is synchronous: every call runs in a
worker thread. Writes of at most ``chunk_size`` bytes use one ``files/upload``;
larger ones an upload session (start, append_v2 per part, finish with mode
overwrite). Nothing is visible before the single commit call, so a failed write
leaves the previous file untouched; Dropbox has no call to abort a session, an
abandoned one expires on its own. While one part uploads the next is read from
the source, so at most about three parts are held in memory.

Config: ``access_token``, or ``refresh_token`` + ``app_key`` (+ ``app_secret``)
for OAuth refresh; ``root`` (folder for the files, default ``/``),
``chunk_size`` (default 8 MiB, at most 150 MB: the per-request limit),
``retries`` (SDK retries on 5xx and rate limits, default 3), ``timeout``
(seconds, default 100), ``ca_certs`` (a PEM bundle to trust instead of the
system one; when set, requests' environment settings, ``REQUESTS_CA_BUNDLE``
and proxy variables included, are ignored so that they cannot override it).

Limits: Dropbox has no containers (``supports_containers`` is False and the
container argument is ignored); paths are case-insensitive, so keys differing
only in case name the same file; keys are refused if a segment is empty, ``.``
or ``..``, and names Dropbox rejects (``malformed_path``, ``disallowed_name``)
give ``InvalidPath``. The etag is Dropbox's ``content_hash`` and the content
type is not stored; ``access="public"`` is not honoured (Dropbox files are
private; public links are out of scope). A read past the end yields no bytes,
as with the local provider.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import dropbox
import requests
from dropbox import exceptions as dbx_errors
from dropbox import files as dbx_files
from dropbox.dropbox_client import BadInputException
from stone.backends.python_rsrc import stone_base, stone_validators

from stowage import errors
from stowage.storage.base import Chunks, ObjectInfo, WriteOptions
from stowage.storage.settings import DropboxSettings, parse

DEFAULT_CHUNK = 8 * 1024 * 1024
MAX_REQUEST = 150 * 1000 * 1000
READ_CHUNK = 256 * 1024
T = TypeVar("T")


class DropboxProvider:
    location = "dropbox"
    supports_containers = False
    default_container = ""

    def __init__(self, client: dropbox.Dropbox, root: str = "/", chunk_size: int = DEFAULT_CHUNK):
        if not 0 < chunk_size <= MAX_REQUEST:
            raise errors.StorageMisconfigured(f"dropbox chunk_size must be 1..{MAX_REQUEST}")
        self.client = client
        self.root = "/" + root.strip("/") if root.strip("/") else ""
        self.chunk_size = chunk_size

    def path(self, key: str) -> str:
        segments = key.split("/")
        if any(s in ("", ".", "..") for s in segments):
            raise errors.InvalidPath("storage key has an empty, '.' or '..' segment")
        return f"{self.root}/{key}"

    async def write(
        self, container: str, key: str, chunks: Chunks, options: WriteOptions
    ) -> ObjectInfo:
        path = self.path(key)
        parts = _parts(chunks, self.chunk_size)
        try:
            first = await anext(parts, b"")
            second = await anext(parts, None)
            if second is None:
                mode = dbx_files.WriteMode.overwrite
                meta = await _call(self.client.files_upload, first, path, mode=mode, mute=True)
            else:
                meta = await self._session_upload(path, first, second, parts)
        finally:
            await parts.aclose()
        return _info(meta)

    async def _session_upload(
        self, path: str, first: bytes, second: bytes, rest: AsyncIterator[bytes]
    ) -> Any:
        start = await _call(self.client.files_upload_session_start, first)
        cursor = dbx_files.UploadSessionCursor(start.session_id, len(first))
        inflight = asyncio.ensure_future(_call(self._append, cursor, second))
        cursor = _advance(cursor, second)
        try:
            while (part := await anext(rest, None)) is not None:
                await inflight
                inflight = asyncio.ensure_future(_call(self._append, cursor, part))
                cursor = _advance(cursor, part)
            await inflight
            commit = dbx_files.CommitInfo(path, dbx_files.WriteMode.overwrite, mute=True)
            return await _call(self.client.files_upload_session_finish, b"", cursor, commit)
        finally:
            if not inflight.done():
                # The thread cannot be interrupted: let its request end before returning.
                await asyncio.wait([inflight])
            if not inflight.cancelled():
                inflight.exception()  # retrieved: the error that matters is already raised

    def _append(self, cursor: dbx_files.UploadSessionCursor, part: bytes) -> None:
        try:
            self.client.files_upload_session_append_v2(part, cursor)
        except dbx_errors.ApiError as exc:
            # The SDK retries a 5xx; if the first attempt had landed, the retry is told
            # the offset moved by exactly this part, and the part is stored.
            err = exc.error
            if not (
                isinstance(err, dbx_files.UploadSessionAppendError) and err.is_incorrect_offset()
            ):
                raise
            if err.get_incorrect_offset().correct_offset != cursor.offset + len(part):
                raise
            return

    async def open(
        self,
        container: str,
        key: str,
        start: int = 0,
        end: int | None = None,
        version: str | None = None,
    ) -> Chunks:
        path = self.path(key)
        headers = None
        if start or end is not None:
            headers = {"Range": f"bytes={start}-{'' if end is None else end}"}
        try:
            meta, response = await _call(self.client.files_download, path, extra_headers=headers)
        except errors.RangeNotSatisfiable:
            return
        if version is not None and meta.rev != version:
            # One request: the body is the revision its result names.
            await asyncio.to_thread(response.close)
            raise errors.StorageVersionChanged("dropbox: the file was replaced")
        try:
            pieces = response.iter_content(READ_CHUNK)
            while (chunk := await _call(next, pieces, None)) is not None:
                yield chunk
        finally:
            await asyncio.to_thread(response.close)

    async def open_whole(self, container: str, key: str) -> AsyncIterator[ObjectInfo | bytes]:
        # One request: its result is the metadata of the revision its body is.
        async for item in self._download(key, None):
            yield item

    async def open_span(
        self, container: str, key: str, start: int, end: int
    ) -> AsyncIterator[ObjectInfo | bytes]:
        async for item in self._download(key, {"Range": f"bytes={start}-{end}"}):
            yield item

    async def _download(
        self, key: str, headers: dict[str, str] | None
    ) -> AsyncIterator[ObjectInfo | bytes]:
        """One download: its result is the whole revision's metadata, then its bytes."""
        path = self.path(key)
        meta, response = await _call(self.client.files_download, path, extra_headers=headers)
        try:
            yield _info(meta)
            pieces = response.iter_content(READ_CHUNK)
            while (chunk := await _call(next, pieces, None)) is not None:
                yield chunk
        finally:
            await asyncio.to_thread(response.close)

    async def stat(self, container: str, key: str) -> ObjectInfo:
        meta = await _call(self.client.files_get_metadata, self.path(key))
        if not isinstance(meta, dbx_files.FileMetadata):
            raise errors.StorageNotFound("dropbox: a folder, not a file, is at this key")
        return _info(meta)

    async def delete(self, container: str, key: str) -> None:
        # delete_v2 also removes whole folders: make sure a file is there first.
        await self.stat(container, key)
        await _call(self.client.files_delete_v2, self.path(key))

    async def close(self) -> None:
        await asyncio.to_thread(self.client.close)


def from_config(config: Mapping[str, Any], data_dir: Path) -> DropboxProvider:
    """The provider of a configuration table (``build`` takes settings already parsed)."""
    return build(parse(DropboxSettings, config), data_dir)


def build(settings: DropboxSettings, data_dir: Path) -> DropboxProvider:
    session = None
    if settings.ca_certs:
        session = dropbox.create_session(ca_certs=settings.ca_certs)
        # An explicit bundle must win over REQUESTS_CA_BUNDLE/CURL_CA_BUNDLE.
        session.trust_env = False
    try:
        client = dropbox.Dropbox(
            oauth2_access_token=settings.access_token,
            oauth2_refresh_token=settings.refresh_token,
            app_key=settings.app_key,
            app_secret=settings.app_secret,
            max_retries_on_error=settings.retries,
            max_retries_on_rate_limit=settings.retries,
            timeout=settings.timeout,
            session=session,
        )
    except (BadInputException, ValueError) as exc:
        raise errors.StorageMisconfigured(f"dropbox: {exc}") from exc
    return DropboxProvider(client, settings.root, settings.chunk_size)


async def _parts(chunks: Chunks, size: int) -> AsyncGenerator[bytes, None]:
    """Regroups the source into parts of exactly ``size`` bytes (the last may be shorter)."""
    buffer = bytearray()
    async for chunk in chunks:
        buffer += chunk
        while len(buffer) >= size:
            with memoryview(buffer) as view:  # one copy, not two
                part = bytes(view[:size])
            del buffer[:size]
            yield part
    if buffer:
        yield bytes(buffer)


def _advance(cursor: dbx_files.UploadSessionCursor, part: bytes) -> dbx_files.UploadSessionCursor:
    return dbx_files.UploadSessionCursor(cursor.session_id, cursor.offset + len(part))


async def _call(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    def run() -> T:
        with _sdk_errors():
            return fn(*args, **kwargs)

    return await asyncio.to_thread(run)


def _info(meta: Any) -> ObjectInfo:
    modified = meta.server_modified.timestamp() if meta.server_modified else 0.0
    return ObjectInfo(meta.size, meta.content_hash or meta.rev, modified, meta.rev)


def _tags(error: Any) -> list[str]:
    """The tag path of a Stone union error, e.g. ``["path", "not_found"]``."""
    tags: list[str] = []
    while isinstance(error, stone_base.Union):
        tags.append(error._tag)
        value = error._value
        error = getattr(value, "reason", value)  # UploadWriteFailed wraps its WriteError
    return tags


_API_TAGS: list[tuple[set[str], type[errors.StowageError]]] = [
    ({"malformed_path", "disallowed_name"}, errors.InvalidPath),
    ({"not_found", "not_file", "not_folder"}, errors.StorageNotFound),
    ({"insufficient_space", "team_folder_insufficient_space"}, errors.StorageFull),
    ({"member_folder_insufficient_space"}, errors.StorageFull),
    (
        {"no_write_permission", "restricted_content", "access_restricted"},
        errors.StorageAccessDenied,
    ),
    ({"team_folder", "unsupported_file"}, errors.StorageAccessDenied),
    ({"conflict"}, errors.StorageConflict),
    ({"too_many_write_operations", "too_many_files", "locked"}, errors.StorageUnavailable),
]


def _api_error(exc: dbx_errors.ApiError) -> errors.StowageError:
    tags = _tags(exc.error)
    summary = "/".join(tags) or "unknown"
    for names, cls in _API_TAGS:
        if names.intersection(tags):
            return cls(f"dropbox: {summary}")
    return errors.StorageError(f"dropbox: {summary}")


def _http_error(exc: dbx_errors.HttpError) -> errors.StowageError:
    if isinstance(exc, dbx_errors.AuthError):
        return errors.StorageAccessDenied(f"dropbox: {'/'.join(_tags(exc.error)) or 'auth'}")
    if isinstance(exc, dbx_errors.BadInputError):
        return errors.StorageMisconfigured("dropbox refused the request as malformed")
    if isinstance(exc, dbx_errors.RateLimitError | dbx_errors.InternalServerError):
        return errors.StorageUnavailable(f"dropbox: HTTP {exc.status_code}")
    if exc.status_code == 416:
        return errors.RangeNotSatisfiable()
    return errors.StorageError(f"dropbox: HTTP {exc.status_code}")


@contextlib.contextmanager
def _sdk_errors() -> Iterator[None]:
    try:
        yield
    except dbx_errors.ApiError as exc:
        raise _api_error(exc) from exc
    except dbx_errors.HttpError as exc:
        raise _http_error(exc) from exc
    except requests.exceptions.SSLError as exc:
        raise errors.StorageMisconfigured("dropbox: TLS verification failed") from exc
    except (requests.exceptions.ConnectionError, requests.exceptions.Timeout) as exc:
        raise errors.StorageUnavailable("dropbox: connection failed") from exc
    except requests.exceptions.RequestException as exc:
        raise errors.StorageUnavailable("dropbox: request failed") from exc
    except stone_validators.ValidationError as exc:
        raise errors.InvalidPath(f"dropbox refused the path: {exc}") from exc
