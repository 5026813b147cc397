"""The multipart upload protocol of the Filestack SDKs (``client.upload``), in the core.

``start`` opens a session; ``part_url`` hands out a signed URL where one piece (a part,
or in intelligent mode a chunk of a part at an offset) may be PUT; ``put_part`` writes
that piece durably (on the node's disk, ``partfiles``, or in the shared store,
``partobjects``); ``complete`` checks the pieces add up and streams
them, in order, through the ordinary store path into the chosen provider. Assembly runs
as a task of its own, so a client that gives up waiting (it is answered "not ready",
202) does not stop it. Sessions left unfinished expire and are swept.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlencode

from stowage import errors
from stowage.config import Settings
from stowage.core import headersafe, names
from stowage.core.partfiles import PartFiles, PartStore, md5_hex
from stowage.core.partobjects import PartObjects
from stowage.core.pieces import part_chain, select, sign_part
from stowage.core.providers import Providers
from stowage.core.security import Credentials, Policy, Target, authorize, check_size
from stowage.core.service import StoreParams
from stowage.core.sources import Source
from stowage.registry.base import App, FileRecord, UploadPart, UploadSession, UploadStore
from stowage.storage import API_PROVIDERS
from stowage.storage.base import Lists

log = logging.getLogger("stowage.uploads")
MAX_PARTS = 10_000


@dataclass
class StartParams:
    filename: str | None
    mimetype: str | None
    size: int
    location: str | None = None
    path: str | None = None
    container: str | None = None
    access: str | None = None


@dataclass(frozen=True)
class PartTarget:
    url: str
    headers: dict[str, str]


class Store(Protocol):
    """The ordinary store path (``Stowage.store``) that an assembled upload goes through."""

    async def __call__(
        self,
        api_key: str | None,
        api_name: str,
        source: Source,
        params: StoreParams,
        creds: Credentials,
    ) -> FileRecord: ...


class Uploads:
    def __init__(
        self, settings: Settings, registry: UploadStore, providers: Providers, store: Store
    ) -> None:
        self.settings = settings
        self.registry = registry
        self.providers = providers
        self.store = store
        self.files = part_store(settings, providers)
        self._assembling: dict[str, asyncio.Task[FileRecord]] = {}
        self._sweeper: asyncio.Task[None] | None = None

    # -- lifecycle -------------------------------------------------------------
    def start_sweeper(self) -> None:
        if self._sweeper is None:
            self._sweeper = asyncio.create_task(self._sweep_forever())

    async def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
            self._sweeper = None
        for task in list(self._assembling.values()):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

    async def _sweep_forever(self) -> None:
        interval = max(1.0, min(300.0, self.settings.upload_expiry_seconds / 4))
        while True:
            await asyncio.sleep(interval)
            try:
                async with self.registry.exclusive("upload-sweep") as mine:
                    if mine:  # one node (or worker process) at a time
                        await self.sweep()
            except Exception:
                log.warning("sweeping expired uploads failed", exc_info=True)

    async def sweep(self) -> int:
        """Remove expired sessions with their pieces, and piece folders no session owns."""
        removed = 0
        cutoff = time.time() - self.settings.upload_expiry_seconds
        for session in await self.registry.expired_uploads(cutoff):
            if session.upload_id in self._assembling:
                continue
            # The session goes first: a client must never find it open with its pieces
            # half gone; pieces left by a failed removal are swept as orphans below.
            await self.registry.delete_upload(session.upload_id)
            await self.files.remove(session.upload_id)
            removed += 1
        for upload_id in await self.files.upload_ids():
            if await self.registry.get_upload(upload_id) is None:
                await self.files.remove(upload_id)
        return removed

    # -- protocol --------------------------------------------------------------
    async def start(
        self, api_key: str | None, params: StartParams, creds: Credentials
    ) -> UploadSession:
        app = await self.providers.app(api_key)
        provider_name = provider_for_location(params.location)
        provider = self.providers.provider_for(app, provider_name)
        path = names.clean_path(params.path) if params.path else None
        container = names.clean_container(params.container) if params.container else None
        if container and not provider.supports_containers:
            raise errors.InvalidParameter("this storage has no containers", parameter="container")
        access = params.access or "private"
        if access not in ("public", "private"):
            raise errors.InvalidParameter("access must be public or private", parameter="access")
        policy = self._authorize(app, creds, path, container or provider.default_container)
        self._check_size(policy, params.size)
        session = UploadSession(
            upload_id=secrets.token_urlsafe(24),
            api_key=app.api_key,
            provider=provider_name,
            filename=names.clean_filename(params.filename),
            mimetype=headersafe.media_type(params.mimetype or "application/octet-stream"),
            size=params.size,
            path=path,
            container=container,
            access=access,
            part_key=secrets.token_urlsafe(32),
            created=time.time(),
        )
        await self.registry.create_upload(session)
        return session

    async def part_url(
        self,
        upload_id: str,
        api_key: str | None,
        part: int,
        size: int,
        md5_b64: str | None,
        offset: int,
        creds: Credentials,
    ) -> PartTarget:
        session, _ = await self._open(upload_id, api_key, creds)
        if not 1 <= part <= MAX_PARTS:
            raise errors.InvalidParameter(f"part must be 1..{MAX_PARTS}", parameter="part")
        if size < 0 or offset < 0 or offset + size > session.size:
            raise errors.InvalidParameter("size/offset do not fit the file", parameter="size")
        md5 = md5_hex(md5_b64) or ""
        expires = int(session.created + self.settings.upload_expiry_seconds)
        fields = {"offset": offset, "size": size, "md5": md5, "expires": expires}
        signature = sign_part(session, part, fields)
        query = urlencode({**fields, "signature": signature})
        url = f"{upload_root(self.settings)}/multipart/part/{upload_id}/{part}?{query}"
        return PartTarget(url, {"Content-Type": "application/octet-stream"})

    async def put_part(
        self,
        upload_id: str,
        part: int,
        fields: dict[str, str],
        chunks: AsyncIterator[bytes],
    ) -> UploadPart:
        """Write one piece at a URL from ``part_url``; the URL's signature is its credential."""
        session = await self.registry.get_upload(upload_id)
        if session is None or session.state != "open":
            raise errors.UploadNotFound(upload_id=upload_id)
        try:
            offset, size, expires = (int(fields[k]) for k in ("offset", "size", "expires"))
            md5, signature = fields["md5"], fields["signature"]
        except (KeyError, ValueError) as exc:
            raise errors.InvalidSignature("the part URL is incomplete") from exc
        signed = {"offset": offset, "size": size, "md5": md5, "expires": expires}
        expected = sign_part(session, part, signed)
        if not hmac.compare_digest(expected.encode(), signature.encode("utf-8", "replace")):
            raise errors.InvalidSignature("the part URL signature does not match")
        if time.time() > expires:
            raise errors.UploadNotFound("the upload has expired", upload_id=upload_id)
        piece = await self.files.write(upload_id, part, offset, size, md5 or None, chunks)
        await self.registry.put_upload_part(piece)
        return piece

    async def commit(
        self, upload_id: str, api_key: str | None, part: int, creds: Credentials
    ) -> None:
        """Intelligent mode's per-part commit: the part's chunks must be there."""
        await self._open(upload_id, api_key, creds)
        pieces = await self.registry.upload_parts(upload_id)
        if not part_chain([p for p in pieces if p.part == part]):
            raise errors.InvalidParts(f"part {part} has no chunks", part=part)

    async def complete(
        self,
        upload_id: str,
        api_key: str | None,
        listed: list[tuple[int, str]] | None,
        creds: Credentials,
    ) -> FileRecord | None:
        """The stored file, or None when assembly is still running (answer: ask again)."""
        session = await self.registry.get_upload(upload_id)
        if session is None or session.api_key != api_key:
            raise errors.UploadNotFound(upload_id=upload_id)
        if session.state == "complete":
            return await self._finished(session)
        task = self._assembling.get(upload_id)
        if task is None:
            try:
                task = await self._begin(session, listed, creds)
            except errors.InvalidParts:
                # Another worker or node finished this upload since the session was read
                # (its parts are gone with it): that file is the answer.
                done = await self._completed(upload_id)
                if done is None:
                    raise
                return done
        try:
            async with asyncio.timeout(self.settings.upload_complete_wait):
                return await asyncio.shield(task)
        except TimeoutError:
            return None

    # -- helpers ---------------------------------------------------------------
    async def _open(
        self, upload_id: str, api_key: str | None, creds: Credentials
    ) -> tuple[UploadSession, App]:
        session = await self.registry.get_upload(upload_id)
        if session is None or session.state != "open" or session.api_key != api_key:
            raise errors.UploadNotFound(upload_id=upload_id)
        app = await self.providers.app(api_key)
        # filestack-python sends no policy with /multipart/upload: the unguessable upload
        # id (given out under a store policy) is the credential; one that is sent is checked.
        self._authorize(app, creds, session.path, self._container(app, session), required=False)
        return session, app

    def _authorize(
        self,
        app: App,
        creds: Credentials,
        path: str | None,
        container: str | None,
        required: bool | None = None,
    ) -> Policy | None:
        return authorize(
            app.secret,
            creds,
            "store",
            Target(path=path, container=container),
            required=app.security if required is None else required,
            now=time.time(),
            skew=self.settings.policy_clock_skew,
        )

    def _container(self, app: App, session: UploadSession) -> str:
        provider = self.providers.provider_for(app, session.provider)
        return session.container or provider.default_container

    def _check_size(self, policy: Policy | None, size: int) -> None:
        if size < 0:
            raise errors.InvalidParameter("size must not be negative", parameter="size")
        if size > self.settings.max_upload_bytes:
            raise errors.PayloadTooLarge(limit=self.settings.max_upload_bytes)
        check_size(policy, size)

    async def _finished(self, session: UploadSession) -> FileRecord:
        record = await self.registry.get(session.handle or "")
        if record is None:
            raise errors.UploadNotFound("the uploaded file is gone", upload_id=session.upload_id)
        return record

    async def _begin(
        self, session: UploadSession, listed: list[tuple[int, str]] | None, creds: Credentials
    ) -> asyncio.Task[FileRecord]:
        app = await self.providers.app(session.api_key)
        policy = self._authorize(app, creds, session.path, self._container(app, session))
        pieces = select(await self.registry.upload_parts(session.upload_id), listed)
        received = sum(p.size for p in pieces)
        if received != session.size:
            raise errors.InvalidParts(
                "the parts do not add up to the file size", expected=session.size, received=received
            )
        self._check_size(policy, received)
        task = asyncio.create_task(self._assemble(session, pieces, creds))
        self._assembling[session.upload_id] = task
        task.add_done_callback(lambda t: self._done(session.upload_id, t))
        return task

    def _done(self, upload_id: str, task: asyncio.Task[FileRecord]) -> None:
        self._assembling.pop(upload_id, None)
        if not task.cancelled() and task.exception() is not None:
            log.info("assembling upload failed: %s", task.exception())

    async def _assemble(
        self, session: UploadSession, pieces: list[UploadPart], creds: Credentials
    ) -> FileRecord:
        source = Source(
            chunks=self.files.read(pieces), filename=session.filename, content_type=session.mimetype
        )
        params = StoreParams(
            filename=session.filename,
            mimetype=session.mimetype,
            path=session.path,
            container=session.container,
            access=session.access,
        )
        try:
            record = await self.store(session.api_key, session.provider, source, params, creds)
        except errors.StowageError:
            done = await self._completed(session.upload_id)
            if done is None:
                raise
            return done
        if not await self.registry.finish_upload(session.upload_id, record.handle):
            await self._discard(record)
            done = await self._completed(session.upload_id)
            if done is None:
                raise errors.UploadNotFound(upload_id=session.upload_id)
            return done
        await self.files.remove(session.upload_id)
        return record

    async def _completed(self, upload_id: str) -> FileRecord | None:
        """The file of an upload that another process (a poll that reached another worker
        or node) assembled at the same time, and finished first."""
        current = await self.registry.get_upload(upload_id)
        if current is None or current.state != "complete":
            return None
        return await self._finished(current)

    async def _discard(self, record: FileRecord) -> None:
        """Our copy of a file that another process stored first."""
        app = await self.providers.app(record.api_key)
        provider = self.providers.provider_for(app, record.provider)
        with contextlib.suppress(errors.StorageNotFound):
            await provider.delete(record.container, record.key)
        await self.registry.delete(record.handle)


def part_store(settings: Settings, providers: Providers) -> PartStore:
    """Pieces go to the default storage when it is a store all nodes share (and can list);
    to the node's disk when it is local disk, or when ``upload_parts_dir`` says so."""
    shared = providers.shared_default_store()
    if settings.upload_parts_dir or shared is None or not isinstance(shared, Lists):
        return PartFiles(settings.upload_parts_path)
    return PartObjects(shared)


def provider_for_location(location: str | None) -> str:
    """The SDKs send ``store.location`` as "s3", "S3", "gcs", ...: the API provider name."""
    if not location:
        return "S3"
    for name in API_PROVIDERS:
        if name.lower() == location.lower():
            return name
    raise errors.InvalidParameter(f"unknown storage location {location!r}", parameter="location")


def upload_root(settings: Settings) -> str:
    """The API origin (the SDKs add ``/multipart/...`` to it)."""
    return settings.api_url().removesuffix("/api")


def location_url(settings: Settings) -> str:
    """What ``location_url`` answers: a bare host (the SDKs prepend ``https://``) behind
    TLS; the full ``http://`` root otherwise (filestack-js uses it as is)."""
    root = upload_root(settings)
    return root.removeprefix("https://")
