"""Amazon S3 and S3-compatible stores (type ``s3``, location ``S3``), through aiobotocore.

Config keys:

- ``bucket`` (required): the container used when a request names none.
- ``endpoint_url``: an S3-compatible store (``http(s)://host:port``); absent means AWS.
- ``region``: signing region, default ``us-east-1``.
- ``access_key_id`` / ``secret_access_key`` (both or neither; neither means the usual
  AWS credential chain: environment, profile, instance role), optional ``session_token``.
- ``addressing_style``: ``path`` or ``virtual`` (``auto`` too); default ``path`` when
  ``endpoint_url`` is set, since most self-hosted stores have no wildcard DNS.
- ``part_size``: multipart part size in bytes, default 8 MiB, at least 5 MiB (the S3 minimum).
- ``part_concurrency``: parts of one upload sent at once, default 4 (1 to 64).
- ``connect_timeout`` / ``read_timeout`` (seconds, defaults 3 and 60) and ``max_attempts``
  (default 2): a wrong or dead endpoint fails with ``StorageUnavailable`` within seconds.
- ``max_connections`` (default 100): connection pool size; a download holds one connection
  for as long as its reader takes, so a small pool would stall other requests behind it.

Unknown keys are refused so that a typo (``endpoint`` for ``endpoint_url``) cannot silently
send requests to AWS.

A stream that fits in one part is a single PutObject, anything larger a multipart upload
with up to ``part_concurrency`` parts in flight while the next one is read
(storage/s3parts.py; memory about ``part_concurrency + 2`` parts per write: 48 MiB at
the defaults). Both are atomic on S3; any
failure, including the source iterator raising or the task being cancelled, aborts the
multipart upload.
``access="public"`` sends the canned ACL ``public-read``; private writes send no ACL, so the
bucket default (private) applies and buckets with ACLs disabled still accept them. Stores
without object ACLs (Swift's s3api unless ``s3_acl`` is on) accept ``public-read`` and ignore it.

Limits: an object has at most 10,000 parts, so at most ``10000 * part_size`` bytes (78 GiB
at the default); a larger stream fails with ``PayloadTooLarge`` and is aborted. ``delete``
asks HeadObject first (S3 deletes are idempotent and would not report a missing object), so
a concurrent writer may race it. The ``modified`` time returned by ``write`` is the local
clock; ``stat`` reports the store's. A missing bucket reads as ``StorageNotFound`` (the
object is not there either) and fails writes with ``StorageMisconfigured`` (the
configuration names a bucket that does not exist). A write cancelled while
CreateMultipartUpload is in flight can leave an empty upload behind: a bucket lifecycle rule
(AbortIncompleteMultipartUpload) sweeps those.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, NoReturn

import aiohttp
from aiobotocore.config import AioConfig
from aiobotocore.session import get_session
from botocore import exceptions as bce

from stowage import errors
from stowage.storage.base import WRITE_MIN_RATE, Chunks, ObjectInfo, WriteOptions
from stowage.storage.s3parts import PartBuffer, PartUploads
from stowage.storage.settings import S3Settings, parse
from stowage.storage.status import whole_size

MIB = 1024 * 1024
MIN_PART = 5 * MIB
MAX_PART = 5 * 1024 * MIB
DEFAULT_PART = 8 * MIB
DEFAULT_PART_CONCURRENCY = 4
MAX_PARTS = 10_000  # S3's limit per multipart upload
READ_CHUNK = 256 * 1024


class S3Provider:
    location = "S3"
    supports_containers = True

    def __init__(
        self,
        bucket: str,
        *,
        endpoint_url: str | None = None,
        region: str = "us-east-1",
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
        session_token: str | None = None,
        addressing_style: str | None = None,
        part_size: int = DEFAULT_PART,
        part_concurrency: int = DEFAULT_PART_CONCURRENCY,
        connect_timeout: float = 3.0,
        read_timeout: float = 60.0,
        max_attempts: int = 2,
        max_connections: int = 100,
    ) -> None:
        self.default_container = bucket
        self.part_size = part_size
        self.part_concurrency = part_concurrency
        self.read_timeout = read_timeout
        self._client_args: dict[str, Any] = {
            "region_name": region,
            "endpoint_url": endpoint_url,
            "aws_access_key_id": access_key_id,
            "aws_secret_access_key": secret_access_key,
            "aws_session_token": session_token,
            "config": AioConfig(
                connect_timeout=connect_timeout,
                read_timeout=read_timeout,
                max_pool_connections=max_connections,
                retries={"total_max_attempts": max_attempts, "mode": "standard"},
                s3={"addressing_style": addressing_style or ("path" if endpoint_url else "auto")},
                signature_version="s3v4",
                # Default CRC trailers (aws-chunked bodies) are not understood by every
                # S3-compatible store; checksums are sent only where S3 requires them.
                request_checksum_calculation="when_required",
                response_checksum_validation="when_required",
            ),
        }
        self._stack: contextlib.AsyncExitStack | None = None
        self._client: Any = None
        self._lock = asyncio.Lock()

    async def _s3(self) -> Any:
        if self._client is None:
            async with self._lock:
                if self._client is None:
                    stack = contextlib.AsyncExitStack()
                    session = get_session()
                    with _mapped("connect"):
                        client = await stack.enter_async_context(
                            session.create_client("s3", **self._client_args)
                        )
                    self._stack, self._client = stack, client
        return self._client

    async def write(
        self, container: str, key: str, chunks: Chunks, options: WriteOptions
    ) -> ObjectInfo:
        s3 = await self._s3()
        params: dict[str, Any] = {
            "Bucket": container,
            "Key": key,
            "ContentType": options.content_type,
        }
        if options.access == "public":
            params["ACL"] = "public-read"
        buffer = PartBuffer(aiter(chunks))
        await buffer.fill(self.part_size)
        if buffer.done:
            first = buffer.take(buffer.have)
            with _mapped("write"):
                reply = await _bounded(
                    s3.put_object(Body=first, **params), self._write_deadline(len(first))
                )
            return ObjectInfo(len(first), _etag(reply), time.time())
        return await self._multipart(s3, params, buffer)

    def _write_deadline(self, size: int) -> float:
        """A request sending ``size`` bytes: read_timeout, plus a second per MiB. The SDK's
        timeouts bound reads only, so a server that stops reading would hold it forever."""
        return self.read_timeout + size / WRITE_MIN_RATE

    async def _multipart(self, s3: Any, params: dict[str, Any], buffer: PartBuffer) -> ObjectInfo:
        with _mapped("write"):
            upload_id = (await s3.create_multipart_upload(**params))["UploadId"]
        ids = {"Bucket": params["Bucket"], "Key": params["Key"], "UploadId": upload_id}
        try:
            parts, size = await self._upload_parts(s3, ids, buffer)
            with _mapped("write"):
                reply = await s3.complete_multipart_upload(MultipartUpload={"Parts": parts}, **ids)
        except BaseException:
            # Shielded so that a cancelled write still removes its parts.
            await asyncio.shield(_abort(s3, ids))
            raise
        return ObjectInfo(size, _etag(reply), time.time())

    async def _upload_parts(
        self, s3: Any, ids: dict[str, Any], buffer: PartBuffer
    ) -> tuple[list[dict[str, Any]], int]:
        uploads = PartUploads(self.part_concurrency)
        size = 0
        try:
            while True:
                await buffer.fill(self.part_size)
                if not buffer.have:
                    break
                body = buffer.take(self.part_size)
                if uploads.count + 1 > MAX_PARTS:
                    raise errors.PayloadTooLarge(
                        f"s3 storage: more than {MAX_PARTS} parts of {self.part_size} bytes"
                    )
                size += len(body)
                deadline = self._write_deadline(len(body))
                await uploads.add(_upload_part(s3, ids, uploads.count + 1, body, deadline))
                del body
            return await uploads.finish(), size
        finally:
            # Parts still running (or failed unread) when the source or a part fails.
            await uploads.close()

    async def open(
        self,
        container: str,
        key: str,
        start: int = 0,
        end: int | None = None,
        version: str | None = None,
    ) -> Chunks:
        if end is not None and end < start:
            return  # an empty range, as the local provider reads it; S3 would send everything
        s3 = await self._s3()
        params: dict[str, Any] = {"Bucket": container, "Key": key}
        if start > 0 or end is not None:
            params["Range"] = f"bytes={start}-{'' if end is None else end}"
        if version is not None:
            params["IfMatch"] = f'"{version}"'  # one GET: its body is that version whole
        with _mapped("pinned read" if version is not None else "read"):
            reply = await s3.get_object(**params)
        body = reply["Body"]
        if version is not None and _etag(reply) != version:
            body.close()  # a store that ignores If-Match: the reply names what it sent
            raise errors.StorageVersionChanged("s3 storage: the object was replaced")
        try:
            async for chunk in _body_chunks(body):
                yield chunk
        finally:
            body.close()

    def open_whole(self, container: str, key: str) -> AsyncIterator[ObjectInfo | bytes]:
        # One GetObject: its headers are the stat of the version its body is.
        return self._described(_info, Bucket=container, Key=key)

    def open_span(
        self, container: str, key: str, start: int, end: int
    ) -> AsyncIterator[ObjectInfo | bytes]:
        # One ranged GetObject: its ETag and Content-Range total describe the version cut.
        return self._described(
            _ranged_info, Bucket=container, Key=key, Range=f"bytes={start}-{end}"
        )

    async def _described(
        self, describe: Callable[[Mapping[str, Any]], ObjectInfo], **params: str
    ) -> AsyncIterator[ObjectInfo | bytes]:
        """One GetObject: what ``describe`` reads in its reply, then its body."""
        s3 = await self._s3()
        with _mapped("read"):
            reply = await s3.get_object(**params)
        body = reply["Body"]
        try:
            yield describe(reply)
            async for chunk in _body_chunks(body):
                yield chunk
        finally:
            body.close()

    async def stat(self, container: str, key: str) -> ObjectInfo:
        s3 = await self._s3()
        with _mapped("read"):
            head = await s3.head_object(Bucket=container, Key=key)
        return _info(head)

    async def delete(self, container: str, key: str) -> None:
        await self.stat(container, key)
        s3 = await self._s3()
        with _mapped("read"):
            await s3.delete_object(Bucket=container, Key=key)

    async def keys(self, container: str, prefix: str) -> AsyncIterator[str]:
        s3 = await self._s3()
        pages = s3.get_paginator("list_objects_v2").paginate(Bucket=container, Prefix=prefix)
        with _mapped("read"):
            async for page in pages:
                for item in page.get("Contents", []):
                    yield str(item["Key"])

    async def close(self) -> None:
        stack, self._stack, self._client = self._stack, None, None
        if stack is not None:
            await stack.aclose()


def from_config(config: Mapping[str, Any], data_dir: Path) -> S3Provider:
    """The provider of a configuration table (``build`` takes settings already parsed)."""
    return build(parse(S3Settings, config), data_dir)


def build(settings: S3Settings, data_dir: Path) -> S3Provider:
    return S3Provider(
        settings.bucket,
        endpoint_url=settings.endpoint_url,
        region=settings.region,
        access_key_id=settings.access_key_id,
        secret_access_key=settings.secret_access_key,
        session_token=settings.session_token,
        addressing_style=settings.addressing_style,
        part_size=settings.part_size,
        part_concurrency=settings.part_concurrency,
        connect_timeout=settings.connect_timeout,
        read_timeout=settings.read_timeout,
        max_attempts=settings.max_attempts,
        max_connections=settings.max_connections,
    )


async def _upload_part(
    s3: Any, ids: dict[str, Any], number: int, body: bytes, deadline: float
) -> dict[str, Any]:
    with _mapped("write"):
        reply = await _bounded(s3.upload_part(PartNumber=number, Body=body, **ids), deadline)
    return {"PartNumber": number, "ETag": reply["ETag"]}


async def _bounded(call: Any, seconds: float) -> Any:
    try:
        async with asyncio.timeout(seconds):
            return await call
    except TimeoutError as exc:
        raise errors.StorageUnavailable("s3 storage stopped reading a write") from exc


async def _abort(s3: Any, ids: dict[str, Any]) -> None:
    # Best effort: the original error matters more than a failed clean-up.
    with contextlib.suppress(Exception):
        await s3.abort_multipart_upload(**ids)


async def _body_chunks(body: Any) -> AsyncIterator[bytes]:
    while True:
        with _mapped("read"):
            chunk = await body.read(READ_CHUNK)
        if not chunk:
            return
        yield chunk


def _info(reply: Mapping[str, Any]) -> ObjectInfo:
    """A HeadObject's, or a whole GetObject's, description of the object."""
    return ObjectInfo(int(reply["ContentLength"]), _etag(reply), reply["LastModified"].timestamp())


def _ranged_info(reply: Mapping[str, Any]) -> ObjectInfo:
    """A ranged GetObject's description of the whole object (``bytes 0-499/5585``)."""
    total = whole_size(reply.get("ContentRange"), "s3 storage")
    return ObjectInfo(total, _etag(reply), reply["LastModified"].timestamp())


def _etag(reply: Mapping[str, Any]) -> str:
    return str(reply.get("ETag", "")).strip('"')


_NOT_FOUND = {"NoSuchKey", "NotFound", "404", "NoSuchVersion"}
_DENIED = {"AccessDenied", "AllAccessDisabled", "AccountProblem", "403", "Forbidden"}
_MISCONFIGURED = {
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "InvalidToken",
    "ExpiredToken",
    "TokenRefreshRequired",
    "AuthorizationHeaderMalformed",
    "PermanentRedirect",
    "InvalidBucketName",
    "AccessControlListNotSupported",
    "401",
}
_UNAVAILABLE = {
    "SlowDown",
    "ServiceUnavailable",
    "InternalError",
    "RequestTimeout",
    "RequestTimeTooSkewed",
    "Throttling",
    "ThrottlingException",
    "503",
    "500",
}
_CONFLICT = {
    "PreconditionFailed",
    "ConditionalRequestConflict",
    "OperationAborted",
    "NoSuchUpload",
    "412",
    "409",
}
_FULL = {"QuotaExceeded", "XMinioStorageFull", "StorageFull", "InsufficientStorage", "507"}
_TRANSPORT = (
    bce.HTTPClientError,
    bce.ConnectionError,
    bce.ResponseStreamingError,
    bce.IncompleteReadError,
    aiohttp.ClientError,
    asyncio.TimeoutError,
)


@contextlib.contextmanager
def _mapped(op: str) -> Iterator[None]:
    """Turns botocore/aiohttp failures into neutral errors; ``op`` is read, pinned read,
    write or connect."""
    try:
        yield
    except errors.StowageError:
        raise
    except bce.ClientError as exc:
        _raise_client_error(exc, op)
    except _TRANSPORT as exc:
        raise errors.StorageUnavailable(f"s3 storage unreachable: {type(exc).__name__}") from exc
    except (bce.NoCredentialsError, bce.PartialCredentialsError) as exc:
        raise errors.StorageMisconfigured("s3 storage: no usable credentials") from exc
    except bce.ParamValidationError as exc:
        raise errors.StorageError(f"s3 storage: invalid request: {exc}") from exc
    except bce.BotoCoreError as exc:
        raise errors.StorageError(f"s3 storage: {type(exc).__name__}") from exc


def _raise_client_error(exc: bce.ClientError, op: str) -> NoReturn:
    error = exc.response.get("Error", {})
    code = str(error.get("Code", ""))
    status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
    message = f"s3 storage: {code or status}: {error.get('Message') or 'request failed'}"
    if code == "NoSuchBucket":
        cls: type[errors.StowageError] = (
            errors.StorageMisconfigured if op == "write" else errors.StorageNotFound
        )
    elif code == "InvalidRange" or status == 416:
        cls = errors.RangeNotSatisfiable
    elif op == "pinned read" and (code == "PreconditionFailed" or status == 412):
        cls = errors.StorageVersionChanged
    else:
        cls = _class_for(code, status)
    raise cls(message) from exc


def _class_for(code: str, status: int) -> type[errors.StorageError]:
    for names, cls in (
        (_NOT_FOUND, errors.StorageNotFound),
        (_DENIED, errors.StorageAccessDenied),
        (_MISCONFIGURED, errors.StorageMisconfigured),
        (_UNAVAILABLE, errors.StorageUnavailable),
        (_CONFLICT, errors.StorageConflict),
        (_FULL, errors.StorageFull),
    ):
        if code in names:
            return cls
    if status == 404:
        return errors.StorageNotFound
    if status == 403:
        return errors.StorageAccessDenied
    if status in (500, 502, 503, 504) or status == 429:
        return errors.StorageUnavailable
    return errors.StorageError
