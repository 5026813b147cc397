"""Azure Blob Storage provider, with azure-storage-blob's asyncio client.

Writes stage the stream as blocks of ``block_size`` (default 8 MiB) while it
arrives, up to ``concurrency`` (default 2) in flight, so memory stays at about
``concurrency + 1`` blocks whatever the object size, then commit the block
list: the commit is the atomic switch, before it readers see the previous blob
unchanged. A stream shorter than one block goes up as a
single Put Blob. When a write fails, its staged blocks are never committed:
they are invisible, and the service drops them at the next commit to that
name or after a week (Azure has no call to drop them sooner). Reads stream
``download_blob`` chunks of at most 4 MiB, with ``offset``/``length`` ranges.

Config: ``container`` (required) and one of ``connection_string``,
``account_name`` + ``account_key``, or ``account_name`` + ``sas_token``
(none of them: anonymous, for public containers). ``endpoint_url`` overrides
the account URL (Azurite: ``http://127.0.0.1:PORT/devstoreaccount1``).
``block_size`` sets the staged block size, ``timeout`` the seconds allowed for
connecting, ``read_timeout`` (default 60, at least ``timeout``) the seconds a
request may go without the service answering or taking bytes before it is
aborted (a stalled server), ``retries`` and ``retry_backoff`` (seconds, doubled
each time) bound the SDK's own retries so an unreachable account fails in seconds.
A block or a small blob being sent is also given up after ``read_timeout`` plus its
size at ``WRITE_MIN_RATE`` (as GCS pieces are): aiohttp starts its read timeout only
once the body is sent, so a service that stops taking bytes mid-body would hold the
store forever.

Limits: ``access=public`` is ignored: Azure grants public read per
container, not per blob. Container creation is not done here.
"""

from __future__ import annotations

import asyncio
import random
import secrets
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from azure.core import MatchConditions
from azure.core.credentials import AzureNamedKeyCredential, AzureSasCredential
from azure.core.exceptions import (
    AzureError,
    ClientAuthenticationError,
    HttpResponseError,
    ResourceExistsError,
    ResourceModifiedError,
    ResourceNotFoundError,
    ServiceRequestError,
    ServiceResponseError,
)
from azure.storage.blob import BlobBlock, ContentSettings
from azure.storage.blob.aio import BlobClient, BlobServiceClient, ExponentialRetry

from stowage import errors
from stowage.storage.base import WRITE_MIN_RATE, Chunks, ObjectInfo, WriteOptions
from stowage.storage.settings import AzureSettings, parse
from stowage.storage.status import error_for, whole_size

DEFAULT_BLOCK = 8 * 1024 * 1024
MAX_BLOCK = 4000 * 1024 * 1024  # the service's limit per staged block
READ_CHUNK = 4 * 1024 * 1024


class _Backoff(ExponentialRetry):
    """Retries after ``initial``, 2x, 4x... seconds (the SDK's own formula starts at 15 s)."""

    def get_backoff_time(self, settings: dict[str, Any]) -> float:
        delay: float = self.initial_backoff * 2 ** max(settings["count"] - 1, 0)
        return delay * random.uniform(0.8, 1.2)


class AzureProvider:
    location = "azure"
    supports_containers = True

    def __init__(
        self,
        service: BlobServiceClient,
        container: str,
        block_size: int = DEFAULT_BLOCK,
        concurrency: int = 2,
        stall_seconds: float = 60.0,
    ) -> None:
        if not 0 < block_size <= MAX_BLOCK:
            raise errors.StorageMisconfigured("azure: block_size must be 1 byte to 4000 MiB")
        if concurrency < 1:
            raise errors.StorageMisconfigured("azure: concurrency must be at least 1")
        self.service = service
        self.default_container = container
        self.block_size = block_size
        self.concurrency = concurrency
        self.stall_seconds = stall_seconds

    async def write(
        self, container: str, key: str, chunks: Chunks, options: WriteOptions
    ) -> ObjectInfo:
        blob = self._blob(container, key)
        settings = ContentSettings(content_type=options.content_type)
        stager = _Stager(blob, self.concurrency, self.stall_seconds)
        buffer = bytearray()
        size = 0
        with _azure_errors(writing=True):
            try:
                async for chunk in chunks:
                    buffer += chunk
                    size += len(chunk)
                    while len(buffer) >= self.block_size:
                        await stager.stage(_take(buffer, self.block_size))
                if not stager.blocks:
                    async with sending(len(buffer), self.stall_seconds):
                        reply = await blob.upload_blob(
                            bytes(buffer), overwrite=True, content_settings=settings
                        )
                else:
                    if buffer:
                        await stager.stage(bytes(buffer))
                    await stager.drain()
                    reply = await blob.commit_block_list(stager.blocks, content_settings=settings)
            finally:
                await stager.abandon()
        return ObjectInfo(size, _etag(reply["etag"]), reply["last_modified"].timestamp())

    async def open(
        self,
        container: str,
        key: str,
        start: int = 0,
        end: int | None = None,
        version: str | None = None,
    ) -> Chunks:
        blob = self._blob(container, key)
        length = None if end is None else end - start + 1
        # The SDK wants an offset whenever a length is given, and none for a whole blob.
        offset = start if start or length is not None else None
        pin: dict[str, Any] = {}
        if version is not None:
            # If-Match on the first GET; the SDK sends the etag it got with every later
            # chunk's GET, so a long read stays on one version too.
            pin = {"etag": f'"{version}"', "match_condition": MatchConditions.IfNotModified}
        with _azure_errors(pinned=version is not None):
            downloader = await blob.download_blob(
                offset=offset, length=length, max_concurrency=1, **pin
            )
            async for chunk in downloader.chunks():
                yield chunk

    async def open_whole(self, container: str, key: str) -> AsyncIterator[ObjectInfo | bytes]:
        # The first GET's headers describe the version it sends; the SDK pins every later
        # chunk's GET to that etag (If-Match), as it does for a pinned ``open``.
        with _azure_errors(pinned=True):  # a later chunk's If-Match failing: replaced
            downloader = await self._blob(container, key).download_blob(max_concurrency=1)
            props = downloader.properties
            yield ObjectInfo(props.size, _etag(props.etag), props.last_modified.timestamp())
            async for chunk in downloader.chunks():
                yield chunk

    async def open_span(
        self, container: str, key: str, start: int, end: int
    ) -> AsyncIterator[ObjectInfo | bytes]:
        # One ranged GET: its etag and Content-Range total are the version it was cut from.
        with _azure_errors(pinned=True):
            downloader = await self._blob(container, key).download_blob(
                offset=start, length=end - start + 1, max_concurrency=1
            )
            props = downloader.properties
            total = whole_size(props.content_range, "azure")
            yield ObjectInfo(total, _etag(props.etag), props.last_modified.timestamp())
            async for chunk in downloader.chunks():
                yield chunk

    async def stat(self, container: str, key: str) -> ObjectInfo:
        with _azure_errors():
            props = await self._blob(container, key).get_blob_properties()
        return ObjectInfo(props.size, _etag(props.etag), props.last_modified.timestamp())

    async def delete(self, container: str, key: str) -> None:
        with _azure_errors():
            await self._blob(container, key).delete_blob()

    async def keys(self, container: str, prefix: str) -> AsyncIterator[str]:
        client = self.service.get_container_client(container)
        with _azure_errors():
            async for blob in client.list_blobs(name_starts_with=prefix):
                yield str(blob.name)

    async def close(self) -> None:
        await self.service.close()

    def _blob(self, container: str, key: str) -> BlobClient:
        return self.service.get_blob_client(container, key)


class _Stager:
    """Stages the blocks of one write, up to ``concurrency`` at a time, remembering their
    order for the commit. Each staged block's bytes are held only until it is sent."""

    def __init__(self, blob: BlobClient, concurrency: int, stall_seconds: float) -> None:
        self.blob = blob
        self.concurrency = concurrency
        self.stall_seconds = stall_seconds
        self.prefix = secrets.token_hex(8)  # one writer's block ids never collide with another's
        self.blocks: list[BlobBlock] = []
        self.pending: set[asyncio.Task[Any]] = set()

    async def stage(self, data: bytes) -> None:
        while len(self.pending) >= self.concurrency:
            await self._wait(asyncio.FIRST_COMPLETED)
        # Ids must have one length within a blob; the SDK base64-encodes them.
        block_id = f"{self.prefix}-{len(self.blocks):06d}"
        self.blocks.append(BlobBlock(block_id))
        self.pending.add(asyncio.create_task(self._put(block_id, data)))

    async def drain(self) -> None:
        while self.pending:
            await self._wait(asyncio.ALL_COMPLETED)

    async def abandon(self) -> None:
        """Stops blocks still in flight (after a failure; a no-op once drained)."""
        for task in self.pending:
            task.cancel()
        await asyncio.gather(*self.pending, return_exceptions=True)
        self.pending.clear()

    async def _put(self, block_id: str, data: bytes) -> None:
        async with sending(len(data), self.stall_seconds):
            await self.blob.stage_block(block_id, data, length=len(data))

    async def _wait(self, when: str) -> None:
        done, self.pending = await asyncio.wait(self.pending, return_when=when)
        # Every finished block's error is read, not only the first: an error never read is
        # logged when its task is collected, at whatever moment the collector runs.
        failures = [task.exception() for task in done if not task.cancelled()]
        for failure in failures:
            if failure is not None:
                raise failure


def from_config(config: Mapping[str, Any], data_dir: Path) -> AzureProvider:
    """The provider of a configuration table (``build`` takes settings already parsed)."""
    return build(parse(AzureSettings, config), data_dir)


def build(settings: AzureSettings, data_dir: Path) -> AzureProvider:
    stall = max(settings.timeout, settings.read_timeout)
    options: dict[str, Any] = {
        "retry_policy": _Backoff(
            initial_backoff=settings.retry_backoff,  # type: ignore[arg-type]
            retry_total=settings.retries,
        ),
        "connection_timeout": settings.timeout,
        "read_timeout": stall,
        "max_single_get_size": READ_CHUNK,
        "max_chunk_get_size": READ_CHUNK,
        "max_single_put_size": settings.block_size,
        "max_block_size": settings.block_size,
    }
    try:
        service = _service(settings, options)
        return AzureProvider(
            service, settings.container, settings.block_size, settings.concurrency, stall
        )
    except (ValueError, TypeError) as exc:
        # The SDK's message may quote the connection string: keep only the type.
        raise errors.StorageMisconfigured(
            f"azure: unusable connection settings ({type(exc).__name__})"
        ) from exc


def _service(settings: AzureSettings, options: dict[str, Any]) -> BlobServiceClient:
    if settings.connection_string:
        return BlobServiceClient.from_connection_string(settings.connection_string, **options)
    account = settings.account_name
    url = settings.endpoint_url or f"https://{account}.blob.core.windows.net"
    credential: Any = None
    if settings.account_key and account:
        credential = AzureNamedKeyCredential(account, settings.account_key)
    elif settings.sas_token:
        credential = AzureSasCredential(settings.sas_token.lstrip("?"))
    return BlobServiceClient(url, credential=credential, **options)


@asynccontextmanager
async def sending(size: int, stall_seconds: float) -> AsyncIterator[None]:
    """A request sending ``size`` bytes, given up (``StorageUnavailable``, a 503) past
    ``stall_seconds`` plus the time to send them at ``WRITE_MIN_RATE``."""
    try:
        async with asyncio.timeout(stall_seconds + size / WRITE_MIN_RATE):
            yield
    except TimeoutError as exc:
        raise errors.StorageUnavailable("azure: the service stopped taking the data") from exc


def _take(buffer: bytearray, size: int) -> bytes:
    """Removes and returns the first ``size`` bytes, copying them once."""
    with memoryview(buffer) as view:
        data = bytes(view[:size])
    del buffer[:size]
    return data


def _etag(value: Any) -> str:
    return str(value or "").strip('"')


@contextmanager
def _azure_errors(writing: bool = False, pinned: bool = False) -> Iterator[None]:
    try:
        yield
    except ResourceModifiedError as exc:
        if pinned:
            raise errors.StorageVersionChanged("azure: the blob was replaced") from exc
        raise errors.StorageConflict(f"azure: {_code(exc) or 'conflict'}") from exc
    except ResourceNotFoundError as exc:
        if writing and _code(exc) == "ContainerNotFound":
            raise errors.StorageMisconfigured("azure: the container does not exist") from exc
        raise errors.StorageNotFound("azure: no such blob") from exc
    except ClientAuthenticationError as exc:
        raise errors.StorageAccessDenied(f"azure: {_code(exc) or 'authentication failed'}") from exc
    except ResourceExistsError as exc:
        raise errors.StorageConflict(f"azure: {_code(exc) or 'conflict'}") from exc
    except HttpResponseError as exc:
        raise _from_status(exc) from exc
    except (ServiceRequestError, ServiceResponseError) as exc:
        raise errors.StorageUnavailable(f"azure: {type(exc).__name__}") from exc
    except AzureError as exc:
        raise errors.StorageError(f"azure: {type(exc).__name__}") from exc


def _code(exc: AzureError) -> str:
    """The service's error code (``BlobNotFound``...); not declared on every class."""
    return str(getattr(exc, "error_code", None) or "")


def _from_status(exc: HttpResponseError) -> errors.StowageError:
    status = exc.status_code or 0
    code = _code(exc)
    if code == "InvalidBlockList" and status != 416:
        # Another writer's commit to the same name discarded our staged blocks.
        return errors.StorageConflict("azure: a concurrent write replaced this blob's blocks")
    return error_for(status, f"azure: {status} {code}".rstrip())
