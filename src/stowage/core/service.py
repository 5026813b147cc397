"""The operations of the File API: store, copy, link, overwrite, remove, download, metadata.

Knows nothing of HTTP. Callers pass what the request carried (a ``Source``,
``Credentials``, plain parameters) and get records or plans back; every
failure is a ``StowageError``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from stowage import errors
from stowage.config import Settings
from stowage.core import (
    events,
    filetypes,
    headersafe,
    integrity,
    metadata,
    names,
    overwrites,
    reading,
)
from stowage.core.conditions import Conditions
from stowage.core.events import Change, Changes
from stowage.core.fetch import Allowed, Fetcher
from stowage.core.overwrites import Overwrite
from stowage.core.providers import Providers
from stowage.core.reading import Download
from stowage.core.security import (
    Credentials,
    Policy,
    Target,
    authorize,
    check_size,
    file_target,
    record_for,
)
from stowage.core.sources import Prepared, Source, prepare
from stowage.registry.base import App, FileRecord, Registry
from stowage.storage.base import LocalFiles, Provider, WriteOptions

log = logging.getLogger("stowage.core")


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
    #: The stored file whose transformation this is (a chain's ``store`` task): a policy
    #: for that one ``handle`` stores it.
    made_from: str | None = None


class Stowage:
    """The file operations, on parts built once by ``stowage/assembly.py``."""

    def __init__(
        self,
        settings: Settings,
        registry: Registry,
        providers: Providers,
        fetcher: Fetcher,
        changes: Changes,
    ) -> None:
        self.settings = settings
        self.registry = registry
        self.providers = providers
        self.fetcher = fetcher
        self.changes = changes

    # -- access ----------------------------------------------------------------
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
        return await record_for(self.registry, self.registry, handle, api_key)

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
        app = await self.providers.app(api_key)
        provider = self.providers.provider_for(app, api_name)
        container = self._container(provider, params.container)
        path = names.clean_path(params.path) if params.path else None
        params.mimetype = params.mimetype and headersafe.media_type(params.mimetype)
        if params.access not in ("public", "private"):
            raise errors.InvalidParameter("access must be public or private", parameter="access")
        target = Target(handle=params.made_from, url=source.url, path=path, container=container)
        policy = self._authorize(app, creds, "store", target, app.security)
        if params.link:
            return await self._link_object(app, api_name, provider, container, path, params)
        if path and not path.endswith("/"):
            await params.conditions.check(provider, container, path)
        allowed = _each_hop(lambda t: self._authorize(app, creds, "store", t, app.security), target)
        decode, limit = params.base64decode, self._max_bytes(policy)
        prepared = await prepare(self.fetcher, source, decode, limit, allowed, app.api_key)
        filename = names.clean_filename(params.filename or prepared.filename)
        mimetype = filetypes.choose(
            params.mimetype,
            prepared.content_type,
            prepared.head,
            "" if decode else filename,  # decoded: the name was the base64 text's
            _unknown_type(source, decode, prepared.head),
        )
        if decode and not params.filename:  # a default name follows the decoded type
            filename = names.clean_filename(filetypes.named_as(filename, mimetype))
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
        await self._committed(Change(events.STORE, app, record))
        return record

    async def _write_new(
        self, provider: Provider, record: FileRecord, prepared: Prepared, policy: Policy | None
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

    async def _link_object(
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
            or filetypes.guess_from_name(filename)
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
        app = await self.providers.app(api_key)
        original = await self._record(handle, app.api_key)
        self._authorize(app, creds, "read", file_target(original), app.security)
        source_provider = self.providers.provider_for(app, original.provider)
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
        app = await self.providers.app(record.api_key)
        call = ("write", "writeUrl") if source.url else "write"
        target = replace(file_target(record), url=source.url)
        policy = self._authorize(app, creds, call, target, required=True)
        if record.cloud:
            raise errors.NotWriteable()
        provider = self.providers.provider_for(app, record.provider)
        await conditions.check(provider, record.container, record.key, record)  # before reading
        allowed = _each_hop(lambda t: self._authorize(app, creds, call, t, True), target)
        limit = self._max_bytes(policy)
        prepared = await prepare(self.fetcher, source, base64decode, limit, allowed, app.api_key)
        mimetype = filetypes.choose(None, prepared.content_type, prepared.head, record.filename, "")
        async with self.registry.handle_lock(handle):
            current = await self._record(handle)
            await conditions.check(provider, current.container, current.key, current)
            updated = await overwrites.write_over(
                self.registry,
                self.providers,
                Overwrite(provider, current, prepared, policy, mimetype or current.mimetype),
            )
        await self._committed(Change(events.OVERWRITE, app, updated, previous=current))
        return updated

    # -- remove ----------------------------------------------------------------
    async def remove(
        self, handle: str, creds: Credentials, skip_storage: bool, api_key: str | None = None
    ) -> FileRecord:
        record = await self._record(handle, api_key)
        app = await self.providers.app(record.api_key)
        self._authorize(app, creds, "remove", file_target(record), required=True)
        async with self.registry.handle_lock(handle):
            current = await self._record(handle)
            if not (skip_storage or current.cloud):
                provider = self.providers.provider_for(app, current.provider)
                try:
                    await provider.delete(current.container, current.key)
                except errors.StorageNotFound:
                    log.warning("object of handle %s was already missing", handle)
            if not await self.registry.delete(handle):
                raise errors.HandleNotFound(handle=handle)
        extra = {"skip_storage": skip_storage}
        await self._committed(Change(events.DELETE, app, current, extra=extra))
        return current

    async def _committed(self, change: Change) -> None:
        """After the registry change, before the answer: the caches first (a read after
        the answer never gets the old bytes from one), then every sink."""
        await self.changes.purge(change)
        await self.changes.publish(change)

    # -- read ------------------------------------------------------------------
    async def download(
        self,
        handle: str,
        creds: Credentials,
        api_key: str | None = None,
        verify: bool = False,
        call: str = "read",
    ) -> Download:
        """``call``: what a policy must allow (``convert`` for a transformation URL whose
        tasks came to nothing: ``auto_image`` for a client taking neither WebP nor AVIF)."""
        record = await self._record(handle, api_key)
        app = await self.providers.app(record.api_key)
        self._authorize(app, creds, call, file_target(record), app.security)
        provider = self.providers.provider_for(app, record.provider)
        info = await reading.described(provider, record)  # a store's GET says it: no HEAD
        if verify or self.settings.verify_downloads:
            await integrity.check(
                self.registry, self.providers, record
            )  # corrupt bytes are refused, never served
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
        app = await self.providers.app(record.api_key)
        if "exif" in selectors:  # a grant of exif implies stat
            self._authorize(app, creds, "exif", file_target(record), required=True)
        else:
            self._authorize(app, creds, "stat", file_target(record), app.security)
        provider = self.providers.provider_for(app, record.provider)
        return await metadata.read(self.settings, provider, record, selectors)


async def _quietly(awaitable: Any) -> None:
    # Any failure: a clean-up must not replace the error that made it necessary (a registry
    # error, e.g., is not always a StowageError).
    try:
        await awaitable
    except Exception:
        log.warning("cleanup after a failed write did not complete", exc_info=True)


def _unknown_type(source: Source, decoded: bool, head: bytes) -> str:
    """The type of a stored file whose content and name name none: bytes decoded from
    base64 are text or bytes; a raw body is text (as the spec says), else bytes."""
    if decoded:
        return filetypes.of_decoded(head)
    return "text/plain" if source.raw else "application/octet-stream"


def _each_hop(check: Callable[[Target], object], target: Target) -> Allowed:
    """The check of each address a URL source redirects to: the request's own check, its
    policy's ``url`` rule applied to where the file is actually fetched from."""

    def allowed(url: str) -> None:
        check(replace(target, url=url))

    return allowed
