"""``stowage migrate``: an app's rows and files from one registry and storage to another
(SQLite + local disk to PostgreSQL + S3, any provider to any), under the same handles.

The source is only read: switching back to its configuration is the rollback. The target
is made a mirror of the source: an app row is created or brought to the source's values; a
file missing there is copied (core/keephandle.py: the same handle, key, filename, type,
upload time and access), checked against the source row's size and SHA-256 before it is
committed; a file there with other content is replaced; with ``prune``, the target's files
of the app that the source no longer has are removed. A file already there with the same
size and SHA-256 is skipped, so a run killed at any point is resumed by running it again
(the pending rows it left in the target are removed first), and a second pass copies only
what changed since the first (docs/operations.md: the downtime is that pass's).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from typing import Any

from stowage import errors
from stowage.assembly import open_stores
from stowage.config import Settings
from stowage.core import keephandle, reading
from stowage.core.keephandle import Given
from stowage.core.providers import Providers
from stowage.migration.report import FAILED, IMPORTED, SKIPPED, Outcome, Report, each
from stowage.registry import upgrade_registry
from stowage.registry.base import App, FileRecord, Registry


@dataclass(frozen=True)
class MigrateOptions:
    apps: tuple[str, ...] = ()  # API keys; empty: every app
    concurrency: int = 8
    prune: bool = False
    #: Replaces the storage configuration of the apps in the target (any provider to any).
    storage: dict[str, dict[str, Any]] | None = None


@dataclass
class Side:
    settings: Settings
    registry: Registry
    providers: Providers

    @classmethod
    async def open(cls, settings: Settings) -> Side:
        registry, providers = await open_stores(settings)
        return cls(settings, registry, providers)

    async def close(self) -> None:
        await self.providers.close()
        await self.registry.close()


def same_registry(a: Settings, b: Settings) -> bool:
    if a.registry_shared or b.registry_shared:
        return a.registry_url == b.registry_url
    return a.registry_path.resolve() == b.registry_path.resolve()


class Mover:
    def __init__(self, source: Side, target: Side, options: MigrateOptions) -> None:
        self.source = source
        self.target = target
        self.options = options

    async def app(self, app: App, on_outcome: Callable[[Outcome], None]) -> Report:
        moved = replace(app, storage=self.options.storage) if self.options.storage else app
        existing = await self.target.registry.get_app(app.api_key)
        if existing is None:
            await self.target.registry.create_app(moved)
        elif existing != moved:
            await self.target.registry.update_app(moved)
        handles = {r.handle async for r in self._source_files(app.api_key)}
        target = self.target
        await keephandle.discard_pending(target.registry, target.providers, moved, handles)

        async def one(record: FileRecord) -> Outcome:
            return await self.one(app, moved, record)

        records = self._source_files(app.api_key)
        report = await each(records, self.options.concurrency, one, on_outcome)
        if self.options.prune:
            report.extra["pruned"] = await self._prune(moved, handles)
        return report

    async def _source_files(self, api_key: str) -> AsyncIterator[FileRecord]:
        """The app's rows, a page at a time (the handles of a page are its cursor)."""
        after: str | None = None
        while page := await self.source.registry.list_files(api_key, after, 500):
            for record in page:
                yield record
            after = page[-1].handle

    async def one(self, app: App, moved: App, record: FileRecord) -> Outcome:
        try:
            return await self._one(app, moved, record)
        except errors.StowageError as exc:
            return Outcome(record.handle, FAILED, f"{exc.code}: {exc.message}")
        except OSError as exc:
            return Outcome(record.handle, FAILED, f"{type(exc).__name__}: {exc}")

    async def _one(self, app: App, moved: App, record: FileRecord) -> Outcome:
        existing = await self.target.registry.get(record.handle)
        if existing is not None and _same(existing, record):
            return Outcome(record.handle, SKIPPED)
        if record.cloud:  # a link to an object the service did not write: the row alone
            if existing is not None:
                await self.target.registry.update(record.with_(version=existing.version + 1))
            else:
                await self.target.registry.reserve(record)
                await self.target.registry.commit(record)
            return Outcome(record.handle, IMPORTED)
        source = self.source.providers.provider_for(app, record.provider)
        chunks = reading.whole(source, record.container, record.key)
        given = Given(
            handle=record.handle,
            filename=record.filename,
            mimetype=record.mimetype,
            uploaded=record.uploaded,
            access=record.access,
            path=record.key,
            container=None if record.container == source.default_container else record.container,
            source_url=record.source_url,
        )

        def check(size: int, sha256: str) -> None:
            if size != record.size or (record.sha256 and sha256 != record.sha256):
                raise errors.IntegrityError(
                    f"the source object does not match its row ({size} bytes, row {record.size})"
                )

        if existing is not None:
            stored = await keephandle.replace_under(
                self.target.registry, self.target.providers, moved, given, chunks, check
            )
        else:
            stored = await keephandle.store_under(
                self.target.registry,
                self.target.providers,
                moved,
                record.provider,
                given,
                chunks,
                check,
            )
        return Outcome(record.handle, IMPORTED, size=stored.size)

    async def _prune(self, app: App, keep: set[str]) -> int:
        """The target's files of ``app`` that the source no longer has (deleted there
        between two passes)."""
        gone: list[FileRecord] = []
        after: str | None = None
        while page := await self.target.registry.list_files(app.api_key, after, 500):
            gone.extend(r for r in page if r.handle not in keep)
            after = page[-1].handle
        for record in gone:
            async with self.target.registry.handle_lock(record.handle):
                if not record.cloud:
                    provider = self.target.providers.provider_for(app, record.provider)
                    with contextlib.suppress(errors.StorageNotFound):
                        await provider.delete(record.container, record.key)
                await self.target.registry.delete(record.handle)
        return len(gone)


def _same(stored: FileRecord, record: FileRecord) -> bool:
    keep = ("api_key", "size", "sha256", "filename", "mimetype", "access", "cloud")
    return all(getattr(stored, f) == getattr(record, f) for f in keep)


async def run_migrate(
    source_settings: Settings,
    target_settings: Settings,
    options: MigrateOptions,
    on_outcome: Callable[[Outcome], None],
) -> Report:
    if same_registry(source_settings, target_settings):
        raise errors.Conflict("the target's registry is the source's: nothing to migrate")
    await upgrade_registry(target_settings)  # a fresh PostgreSQL gets its schema
    source = await Side.open(source_settings)
    try:
        target = await Side.open(target_settings)
        try:
            return await _run(Mover(source, target, options), options, on_outcome)
        finally:
            await target.close()
    finally:
        await source.close()


async def _run(
    mover: Mover, options: MigrateOptions, on_outcome: Callable[[Outcome], None]
) -> Report:
    apps = await mover.source.registry.list_apps()
    if options.apps:
        unknown = set(options.apps) - {a.api_key for a in apps}
        if unknown:
            raise errors.InvalidParameter(f"no app {', '.join(sorted(unknown))} in the source")
        apps = [a for a in apps if a.api_key in options.apps]
    total = Report()
    for app in apps:
        async with mover.target.registry.exclusive(f"migrate:{app.api_key}") as mine:
            if not mine:
                raise errors.Conflict(f"another migrate into app {app.api_key} is running")
            report = await mover.app(app, on_outcome)
        total.merge(report)
    total.extra["apps"] = len(apps)
    total.extra.setdefault("pruned", 0)
    return total
