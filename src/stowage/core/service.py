"""The operations of the File API: store, copy, link, overwrite, remove, download, metadata.

Knows nothing of HTTP. Callers pass what the request carried (a ``Source``,
``Credentials``, plain parameters) and get records or plans back; every
failure is a ``StowageError``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stowage import errors
from stowage.config import Settings
from stowage.core import (
    events,
    headersafe,
    inspect,
    integrity,
    metadata,
    mimetypes,
    names,
    overwrites,
    reading,
    streams,
)
from stowage.core.conditions import Conditions
from stowage.core.fetch import Fetcher
from stowage.core.janitor import Janitor
from stowage.core.security import Credentials, Policy, Target, authorize, check_size
from stowage.core.uploads import Uploads
from stowage.registry.base import App, FileRecord, OverwriteIntent, Registry
from stowage.storage import API_PROVIDERS, build_provider
from stowage.storage.base import LocalFiles, ObjectInfo, Provider, Recovers, WriteOptions
from stowage.storage.prefixed import prefixed

log = logging.getLogger("stowage.core")
SWEEP_TIMEOUT = 30.0


@dataclass
class Source:
    """Where new content comes from: a stream of bytes or a URL to fetch."""

    chunks: AsyncIterator[bytes] | None = None
    url: str | None = None
    filename: str | None = None
    content_type: str | None = None
    raw: bool = False  # a raw body (unknown types default to text/plain, as the spec says)


@dataclass
class StoreParams:
    filename: str | None = None
    mimetype: str | None = None
    path: str | None = None
    container: str | None = None
    access: str = "private"
    base64decode: bool = False
    link: bool = False
    conditions: Conditions = field(default_factory=Conditions)  # If-None-Match with a path


@dataclass
class Download:
    record: FileRecord
    info: ObjectInfo
    provider: Provider
    local_path: Path | None
    app: App


@dataclass
class _Prepared:
    chunks: AsyncIterator[bytes]
    head: bytes
    content_type: str | None
    filename: str | None
    source_url: str | None = None
    digest: streams.Digest = field(default_factory=streams.Digest)


class Stowage:
    def __init__(self, settings: Settings, registry: Registry) -> None:
        self.settings = settings
        self.registry = registry
        self.fetcher = Fetcher(
            allow_private=settings.fetch_allow_private,
            connect_timeout=settings.fetch_connect_timeout,
            read_timeout=settings.fetch_read_timeout,
            total_timeout=settings.fetch_total_timeout,
            max_redirects=settings.fetch_max_redirects,
            max_bytes=settings.fetch_max_bytes,
            max_concurrent=settings.fetch_max_concurrent,
        )
        self._providers: dict[tuple[str, str, str], Provider] = {}
        self.events: events.EventSink = events.NullSink()
        self.uploads = Uploads(self)
        self.janitor = Janitor(settings, registry, self.clean_up)
        self.draining = False  # set on SIGTERM: /readyz fails while requests drain

    # -- lifecycle -------------------------------------------------------------
    async def start(self, recover: bool = True) -> None:
        """``recover=False`` for worker processes: their parent recovered before forking."""
        await self.registry.open()
        if recover:
            await self.recover()
        self.uploads.start_sweeper()
        self.janitor.start()
        await self.events.start()

    async def close(self) -> None:
        await self.janitor.close()
        await self.uploads.close()
        await self.events.close()
        await self.fetcher.close()
        for provider in self._providers.values():
            await provider.close()
        await self.registry.close()

    async def recover(self) -> int:
        """Undo stores that a crash interrupted (pending rows and their objects, temp files)
        and settle the overwrites it interrupted."""
        cleaned = await self.clean_up()
        for provider in [*self._default_local_providers(), *await self._app_providers()]:
            if isinstance(provider, Recovers):
                cleaned += await _sweep(provider)
        return cleaned

    async def clean_up(self) -> int:
        """What crashed writers left in the registry: abandoned stores, unsettled overwrites.
        Overwrite intents need no grace: each is settled under its handle's lock, which a
        live overwrite holds until its row update has dropped its intent."""
        return await self.clean_pending() + await overwrites.settle_all(self, time.time())

    async def clean_pending(self) -> int:
        """Removes abandoned pending rows and whatever their stores wrote."""
        cleaned = 0
        for record in await self.registry.pending(older_than=self._abandoned_before()):
            app = await self.registry.get_app(record.api_key)
            if app is not None and not record.cloud:
                try:
                    provider = self.provider_for(app, record.provider)
                    await provider.delete(record.container, record.key)
                except errors.StowageError:
                    pass
            await self.registry.abandon(record.handle)
            cleaned += 1
        return cleaned

    def _abandoned_before(self) -> float:
        """One node owns a SQLite registry, so at its start every pending row is abandoned.
        A shared registry's pending rows may be live uploads on other nodes: only those
        older than ``pending_grace_seconds`` are taken as left by a crash."""
        if self.settings.registry_shared:
            return time.time() - self.settings.pending_grace_seconds
        return time.time()

    async def ready(self) -> None:
        """Readiness: raises a ``StowageError`` when this node should get no traffic."""
        if self.draining:
            raise errors.ShuttingDown()
        await self.registry.ping()

    async def _app_providers(self) -> list[Provider]:
        found: list[Provider] = []
        for app in await self.registry.list_apps():
            for api_name in app.storage:
                try:
                    found.append(self.provider_for(app, api_name))
                except errors.StowageError:
                    log.warning("storage %s of app %s is misconfigured", api_name, app.api_key)
        return found

    def _default_local_providers(self) -> list[Provider]:
        root = self.settings.data_dir / "storage"
        if self.settings.default_storage.get("type") != "local" or not root.exists():
            return []
        return [
            self._default_provider(App(api_key=p.name, secret=""))
            for p in sorted(root.iterdir())
            if p.is_dir()
        ]

    # -- apps and providers ----------------------------------------------------
    async def app(self, api_key: str | None) -> App:
        if not api_key:
            raise errors.Unauthenticated("the key query parameter (API key) is required")
        app = await self.registry.get_app(api_key)
        if app is None:
            raise errors.InvalidApiKey()
        return app

    def provider_for(self, app: App, api_name: str) -> Provider:
        if api_name not in API_PROVIDERS:
            raise errors.InvalidParameter(
                f"unknown provider {api_name!r}; one of {', '.join(API_PROVIDERS)}",
                parameter="provider",
            )
        config = app.storage.get(api_name)
        if config is None:
            if api_name != "S3":
                raise errors.ProviderNotEnabled(
                    f"storage provider {api_name!r} is not enabled for this app", provider=api_name
                )
            return self._default_provider(app)
        return self._cached(app.api_key, api_name, config)

    def _default_provider(self, app: App) -> Provider:
        """The service's own storage: a folder per app on the default local disk; in a store
        shared by all apps (a bucket), a key prefix per app, so apps never see each other."""
        config = dict(self.settings.default_storage)
        if config.get("type") == "local" and "root" not in config:
            config["root"] = str(self.settings.data_dir / "storage" / app.api_key)
            return self._cached("", app.api_key, config)
        return prefixed(self._cached("", "default", config), app.api_key)

    def shared_default_store(self) -> Provider | None:
        """The default storage as one store for all apps (no app prefix), or None when it is
        local disk, which only a shared mount would make common to several nodes."""
        config = dict(self.settings.default_storage)
        if config.get("type") == "local":
            return None
        return self._cached("", "default", config)

    def _cached(self, scope: str, name: str, config: dict[str, Any]) -> Provider:
        fingerprint = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()
        key = (scope, name, fingerprint)
        provider = self._providers.get(key)
        if provider is None:
            provider = build_provider(config, self.settings.data_dir)
            self._providers[key] = provider
        return provider

    def _authorize(
        self,
        app: App,
        creds: Credentials,
        call: str | tuple[str, ...],
        target: Target,
        required: bool,
    ) -> Policy | None:
        return authorize(
            app.secret,
            creds,
            call,
            target,
            required=required,
            now=time.time(),
            skew=self.settings.policy_clock_skew,
        )

    async def _record(self, handle: str, api_key: str | None = None) -> FileRecord:
        record = await self.registry.get(handle) if names.is_handle(handle) else None
        other = api_key and (record is None or api_key != record.api_key)
        if other and await self.registry.get_app(api_key or "") is None:
            raise errors.UnknownApiKey()  # not a 404: the file may well exist (decisions.md)
        if record is None or (api_key and api_key != record.api_key):
            raise errors.HandleNotFound(handle=handle)
        return record

    # -- sources ---------------------------------------------------------------
    async def _prepare(self, source: Source, decode: bool, max_bytes: int) -> _Prepared:
        if source.url is not None:
            fetched = await self.fetcher.open(source.url)
            chunks, declared, filename = fetched.chunks, fetched.content_type, fetched.filename
        elif source.chunks is not None:
            chunks, declared, filename = source.chunks, source.content_type, source.filename
        else:
            raise errors.MissingFile()
        if decode:
            chunks = streams.base64_decoded(chunks)
            declared = None
        chunks = streams.limited(chunks, max_bytes, "the file is larger than allowed")
        head, chunks = await streams.peek(chunks, mimetypes.SNIFF_BYTES)
        prepared = _Prepared(chunks, head, declared, filename, source.url)
        prepared.chunks = prepared.digest.tap(chunks)
        return prepared

    def _max_bytes(self, policy: Policy | None) -> int:
        limit = self.settings.max_upload_bytes
        if policy is not None and policy.max_size is not None:
            limit = min(limit, policy.max_size)
        return limit

    # -- store -----------------------------------------------------------------
    async def store(
        self,
        api_key: str | None,
        api_name: str,
        source: Source,
        params: StoreParams,
        creds: Credentials,
    ) -> FileRecord:
        app = await self.app(api_key)
        provider = self.provider_for(app, api_name)
        container = self._container(provider, params.container)
        path = names.clean_path(params.path) if params.path else None
        params.mimetype = params.mimetype and headersafe.media_type(params.mimetype)
        if params.access not in ("public", "private"):
            raise errors.InvalidParameter("access must be public or private", parameter="access")
        target = Target(url=source.url, path=path, container=container)
        policy = self._authorize(app, creds, "store", target, app.security)
        if params.link:
            return await self._link(app, api_name, provider, container, path, params)
        if path and not path.endswith("/"):
            await params.conditions.check(provider, container, path)
        prepared = await self._prepare(source, params.base64decode, self._max_bytes(policy))
        filename = names.clean_filename(params.filename or prepared.filename)
        mimetype = mimetypes.choose(
            params.mimetype,
            prepared.content_type,
            prepared.head,
            filename,
            "text/plain" if source.raw else "application/octet-stream",
        )
        record = FileRecord(
            handle=names.new_handle(),
            api_key=app.api_key,
            provider=api_name,
            location=provider.location,
            container=container,
            key=names.storage_key(path, filename),
            filename=filename,
            mimetype=mimetype,
            uploaded=time.time() * 1000,
            source_url=prepared.source_url,
            access=params.access,
        )
        record = await self._write_new(provider, record, prepared, policy)
        await self.events.publish(app, events.STORE, record, {})
        return record

    async def _write_new(
        self, provider: Provider, record: FileRecord, prepared: _Prepared, policy: Policy | None
    ) -> FileRecord:
        await self.registry.reserve(record)
        written = False
        try:
            await provider.write(
                record.container,
                record.key,
                prepared.chunks,
                WriteOptions(content_type=record.mimetype, access=record.access),
            )
            written = True
            check_size(policy, prepared.digest.size)
            record = record.with_(size=prepared.digest.size, sha256=prepared.digest.sha256)
            await self.registry.commit(record)
        except BaseException:
            if written:
                await _quietly(provider.delete(record.container, record.key))
            await self.registry.abandon(record.handle)
            raise
        return record

    def _container(self, provider: Provider, container: str | None) -> str:
        if not container:
            return provider.default_container
        if not provider.supports_containers:
            raise errors.InvalidParameter(
                f"{provider.location} has no containers; do not send container",
                parameter="container",
            )
        return names.clean_container(container)

    async def _link(
        self,
        app: App,
        api_name: str,
        provider: Provider,
        container: str,
        path: str | None,
        params: StoreParams,
    ) -> FileRecord:
        """Deletion rule 1: a handle for an object the service did not write."""
        if not path or path.endswith("/"):
            raise errors.InvalidParameter("link needs the path of an existing object")
        info = await provider.stat(container, path)
        filename = names.clean_filename(params.filename or path.rsplit("/", 1)[-1])
        record = FileRecord(
            handle=names.new_handle(),
            api_key=app.api_key,
            provider=api_name,
            location=provider.location,
            container=container,
            key=path,
            filename=filename,
            mimetype=params.mimetype  # checked by store()
            or mimetypes.guess_from_name(filename)
            or "application/octet-stream",
            size=info.size,
            uploaded=time.time() * 1000,
            cloud=True,
            access=params.access,
        )
        await self.registry.reserve(record)
        await self.registry.commit(record)
        return record

    async def copy(
        self,
        api_key: str | None,
        api_name: str,
        handle: str,
        params: StoreParams,
        creds: Credentials,
    ) -> FileRecord:
        """``/store/<PROVIDER>/<HANDLE>``: a new handle holding a copy of a stored file."""
        app = await self.app(api_key)
        original = await self._record(handle, app.api_key)
        self._authorize(app, creds, "read", Target(handle=handle), app.security)
        source_provider = self.provider_for(app, original.provider)
        chunks = reading.whole(source_provider, original.container, original.key)
        source = Source(chunks=chunks, filename=original.filename, content_type=original.mimetype)
        params.filename = params.filename or original.filename
        params.mimetype = params.mimetype or original.mimetype
        return await self.store(api_key, api_name, source, params, creds)

    # -- overwrite -------------------------------------------------------------
    async def overwrite(
        self,
        handle: str,
        source: Source,
        base64decode: bool,
        creds: Credentials,
        api_key: str | None = None,
        conditions: Conditions | None = None,
    ) -> FileRecord:
        conditions = conditions or Conditions()
        record = await self._record(handle, api_key)
        app = await self.app(record.api_key)
        call = ("write", "writeUrl") if source.url else "write"
        target = Target(handle=handle, url=source.url, path=record.key, container=record.container)
        policy = self._authorize(app, creds, call, target, required=True)
        if record.cloud:
            raise errors.NotWriteable()
        provider = self.provider_for(app, record.provider)
        await conditions.check(provider, record.container, record.key)  # fail before reading
        prepared = await self._prepare(source, base64decode, self._max_bytes(policy))
        mimetype = mimetypes.choose(None, prepared.content_type, prepared.head, record.filename, "")
        async with self.registry.handle_lock(handle):
            current = await self._record(handle)
            await conditions.check(provider, current.container, current.key)
            updated = await self._write_over(
                provider, current, prepared, policy, mimetype or current.mimetype
            )
        await self.events.publish(app, events.OVERWRITE, updated, {})
        return updated

    async def _write_over(
        self,
        provider: Provider,
        current: FileRecord,
        prepared: _Prepared,
        policy: Policy | None,
        mimetype: str,
    ) -> FileRecord:
        """Commits the new bytes, then the row; the caller holds the handle's lock. The
        intent is recorded when the body has ended, before the provider commits
        (core/overwrites.py): a crash between commit and row update is settled later."""
        intents: list[OverwriteIntent] = []

        def updated() -> FileRecord:
            return current.with_(
                size=prepared.digest.size,
                sha256=prepared.digest.sha256,
                mimetype=mimetype,
                version=current.version + 1,
            )

        async def at_end() -> None:
            check_size(policy, prepared.digest.size)  # before the commit: the old version stays
            intent = overwrites.intent_for(updated())
            if not await self.registry.intend_overwrite(intent):
                raise errors.Conflict("the file changed during this overwrite; nothing written")
            intents.append(intent)

        chunks = streams.then(prepared.chunks, at_end)
        options = WriteOptions(content_type=mimetype, access=current.access)
        try:
            await provider.write(current.container, current.key, chunks, options)
        except BaseException:
            if intents:  # the commit may have happened before the error: ask storage
                await _quietly(overwrites.settle(self, intents[0]))
            raise
        record = updated()
        if not await self.registry.update(record):
            raise errors.HandleNotFound(handle=current.handle)
        return record

    # -- remove ----------------------------------------------------------------
    async def remove(
        self, handle: str, creds: Credentials, skip_storage: bool, api_key: str | None = None
    ) -> FileRecord:
        record = await self._record(handle, api_key)
        app = await self.app(record.api_key)
        self._authorize(app, creds, "remove", Target(handle=handle), required=True)
        async with self.registry.handle_lock(handle):
            current = await self._record(handle)
            if not (skip_storage or current.cloud):
                provider = self.provider_for(app, current.provider)
                try:
                    await provider.delete(current.container, current.key)
                except errors.StorageNotFound:
                    log.warning("object of handle %s was already missing", handle)
            if not await self.registry.delete(handle):
                raise errors.HandleNotFound(handle=handle)
        await self.events.publish(app, events.DELETE, current, {"skip_storage": skip_storage})
        return current

    # -- read ------------------------------------------------------------------
    async def download(
        self, handle: str, creds: Credentials, api_key: str | None = None, verify: bool = False
    ) -> Download:
        record = await self._record(handle, api_key)
        app = await self.app(record.api_key)
        self._authorize(app, creds, "read", Target(handle=handle), app.security)
        provider = self.provider_for(app, record.provider)
        info = await reading.described(provider, record)  # a store's GET says it: no HEAD
        if verify or self.settings.verify_downloads:
            await integrity.check(self, record)  # corrupt bytes are refused, never served
        local = (
            provider.local_path(record.container, record.key)
            if isinstance(provider, LocalFiles)
            else None
        )
        return Download(record, info, provider, local, app)

    async def metadata(
        self, handle: str, selectors: set[str], creds: Credentials, api_key: str | None = None
    ) -> dict[str, Any]:
        record = await self._record(handle, api_key)
        app = await self.app(record.api_key)
        if "exif" in selectors:  # a grant of exif implies stat
            self._authorize(app, creds, "exif", Target(handle=handle), required=True)
        else:
            self._authorize(app, creds, "stat", Target(handle=handle), app.security)
        provider = self.provider_for(app, record.provider)
        wanted = metadata.wanted(selectors)
        hashes = [h for h in inspect.HASHES if h in wanted]
        opened = (
            await reading.open_current(provider, record.container, record.key) if hashes else None
        )
        info = opened.info if opened else await provider.stat(record.container, record.key)
        fields = metadata.record_fields(record, info)
        out = {name: fields[name] for name in wanted if name in fields}
        if opened:  # the hashes of the version whose size is reported
            out.update(await inspect.hash_stream(opened.chunks, hashes))
        if "exif" in wanted:
            out["exif"] = await self._exif(provider, record)
        return out

    async def _exif(self, provider: Provider, record: FileRecord) -> dict[str, Any]:
        local = (
            provider.local_path(record.container, record.key)
            if isinstance(provider, LocalFiles)
            else None
        )
        return await inspect.read_exif(
            reading.whole(provider, record.container, record.key, self._exif_span),
            local,
            max_bytes=self.settings.exif_max_bytes,
            max_pixels=self.settings.exif_max_pixels,
            timeout=self.settings.exif_timeout,
            spool_dir=self.settings.data_dir / "tmp",
        )

    def _exif_span(self, size: int) -> tuple[int, int]:
        return 0, min(size, self.settings.exif_max_bytes) - 1

    # -- links -----------------------------------------------------------------
    def link(self, record: FileRecord) -> str:
        if self.settings.store_link == "api":
            return self.api_link(record.handle)
        return f"{self.settings.cdn_url()}/{record.handle}"

    def api_link(self, handle: str) -> str:
        return f"{self.settings.api_url()}/file/{handle}"


async def _sweep(provider: Recovers) -> int:
    """Start-up must not hang on a provider that is down: sweep it later instead."""
    try:
        return await asyncio.wait_for(provider.sweep_temporary(), SWEEP_TIMEOUT)
    except (errors.StowageError, TimeoutError):
        log.warning("could not sweep temporary state of a provider", exc_info=True)
        return 0


async def _quietly(awaitable: Any) -> None:
    # Any failure: a clean-up must not replace the error that made it necessary (a registry
    # error, e.g., is not always a StowageError).
    try:
        await awaitable
    except Exception:
        log.warning("cleanup after a failed write did not complete", exc_info=True)
