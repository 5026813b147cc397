"""``stowage import``: files of another File API service moved in under their own handles.

Each entry is fetched from the old side's CDN (oldside.py) and stored under the same
handle with its filename, mimetype and upload time (core/keephandle.py), several at once.
A run is idempotent and resumable: a handle stored with the old file's size and SHA-256 is
skipped; a different file under the handle is reported, not replaced, unless
``overwrite``; what a killed run left half written is removed before the next one starts.
The journal lists what each run did; with ``trust_journal`` a second run skips those
without asking the old side. Every file is checked before it is committed: its size
against the old side's, its SHA-256 (and MD5 when the old side gives it) against what
was received and written.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from stowage import errors
from stowage.assembly import open_stores
from stowage.config import Settings
from stowage.core import headersafe, keephandle
from stowage.core.fetch import Fetcher
from stowage.core.keephandle import Given
from stowage.core.providers import Providers
from stowage.migration import oldside
from stowage.migration.entries import Entry, epoch_ms
from stowage.migration.journal import Journal
from stowage.migration.oldside import OldService
from stowage.migration.report import FAILED, IMPORTED, SKIPPED, Outcome, Report, each
from stowage.registry.base import App, FileRecord, Registry


@dataclass(frozen=True)
class ImportOptions:
    api_key: str  # the app here that receives the files
    provider: str = "S3"  # its API provider name; "S3" is the default storage
    concurrency: int = 8
    overwrite: bool = False
    state: Path | None = None  # the journal; default data_dir/imports/<api_key>.jsonl
    #: Skip what the journal lists (and the registry holds unchanged) without asking the
    #: old side: a fast resume, blind to files changed there since.
    trust_journal: bool = False


class Importer:
    def __init__(
        self,
        registry: Registry,
        providers: Providers,
        fetcher: Fetcher,
        old: OldService,
        app: App,
        options: ImportOptions,
        journal: Journal,
    ) -> None:
        self.registry = registry
        self.providers = providers
        self.fetcher = fetcher
        self.old = old
        self.app = app
        self.options = options
        self.journal = journal

    async def run(self, entries: list[Entry], on_outcome: Callable[[Outcome], None]) -> Report:
        return await each(entries, self.options.concurrency, self.one, on_outcome)

    async def one(self, entry: Entry) -> Outcome:
        try:
            return await self._one(entry)
        except errors.StowageError as exc:
            return Outcome(entry.handle, FAILED, f"{exc.code}: {exc.message}")
        except (OSError, ValueError) as exc:
            return Outcome(entry.handle, FAILED, f"{type(exc).__name__}: {exc}")

    async def _one(self, entry: Entry) -> Outcome:
        handle = keephandle.checked_handle(entry.handle)
        existing = await self.registry.get(handle)
        if existing is not None:
            if existing.api_key != self.app.api_key:
                return Outcome(handle, FAILED, "the handle belongs to another app here")
            done = self.options.trust_journal and self.journal.done.get(handle)
            if done and (done.size, done.sha256) == (existing.size, existing.sha256):
                return Outcome(handle, SKIPPED, "imported before")
        expected = await self._expected(entry)
        if existing is not None:
            if await self._same(existing, expected):
                self.journal.record(handle, existing.size, existing.sha256)
                return Outcome(handle, SKIPPED, "already stored, same size and SHA-256")
            if not self.options.overwrite:
                reason = (
                    f"a different file is stored under this handle ({existing.size} bytes, "
                    f"old side {expected.size}); --overwrite replaces it"
                )
                return Outcome(handle, FAILED, reason)
        record = await self._fetch_and_store(expected, replacing=existing is not None)
        self.journal.record(handle, record.size, record.sha256)
        return Outcome(handle, IMPORTED, size=record.size)

    async def _expected(self, entry: Entry) -> Entry:
        """The export's facts, completed from the old side's metadata when they fall short."""
        if entry.complete():
            return entry
        found = await oldside.metadata(self.fetcher, self.old, entry.handle)
        size = found.get("size")
        return replace(
            entry,
            filename=entry.filename or _text(found.get("filename")),
            mimetype=entry.mimetype or _text(found.get("mimetype")),
            size=entry.size
            if entry.size is not None
            else (int(size) if size is not None else None),
            uploaded=entry.uploaded
            if entry.uploaded is not None
            else epoch_ms(found.get("uploaded")),
            md5=entry.md5 or _text(found.get("md5")),
            sha256=entry.sha256 or _text(found.get("sha256")),
        )

    async def _same(self, existing: FileRecord, expected: Entry) -> bool:
        if expected.size is not None and expected.size != existing.size:
            return False
        sha256 = expected.sha256 or await self._old_sha256(expected.handle)
        return sha256.lower() == existing.sha256

    async def _old_sha256(self, handle: str) -> str:
        """The old side gave no SHA-256: its bytes are read and hashed (nothing stored)."""
        fetched = await self.fetcher.open(self.old.file_url(handle))
        digest = hashlib.sha256()
        async for chunk in fetched.chunks:
            digest.update(chunk)
        return digest.hexdigest()

    async def _fetch_and_store(self, expected: Entry, replacing: bool) -> FileRecord:
        fetched = await self.fetcher.open(self.old.file_url(expected.handle))
        md5 = hashlib.md5(usedforsecurity=False)
        size = expected.size if expected.size is not None else fetched.length
        given = Given(
            handle=expected.handle,
            filename=expected.filename or fetched.filename or expected.handle,
            # an unusable type from the old side is guessed from the name, not a failure
            mimetype=_media_type(expected.mimetype) or _media_type(fetched.content_type) or "",
            uploaded=expected.uploaded if expected.uploaded is not None else time.time() * 1000,
        )

        def check(received: int, sha256: str) -> None:
            if size is not None and received != size:
                raise errors.UpstreamError(f"received {received} bytes, the old side says {size}")
            if expected.sha256 and sha256 != expected.sha256.lower():
                raise errors.UpstreamError("the SHA-256 received is not the old side's")
            if expected.md5 and md5.hexdigest() != expected.md5.lower():
                raise errors.UpstreamError("the MD5 received is not the old side's")

        chunks = _md5_tap(fetched.chunks, md5)
        try:
            if replacing:
                return await keephandle.replace_under(
                    self.registry, self.providers, self.app, given, chunks, check
                )
            return await keephandle.store_under(
                self.registry, self.providers, self.app, self.options.provider, given, chunks, check
            )
        finally:
            await oldside.close(fetched)


async def _md5_tap(chunks: AsyncIterator[bytes], md5: Any) -> AsyncIterator[bytes]:
    async for chunk in chunks:
        md5.update(chunk)
        yield chunk


def _text(value: Any) -> str | None:
    return None if value is None else str(value) or None


def _media_type(value: str | None) -> str | None:
    bare = (value or "").split(";", 1)[0].strip()
    return bare if bare and headersafe.is_media_type(bare) else None


async def run_import(
    settings: Settings,
    entries: list[Entry],
    old: OldService,
    options: ImportOptions,
    on_outcome: Callable[[Outcome], None],
) -> Report:
    """One run: the app's import lock, what a killed run left removed, then every entry."""
    registry, providers = await open_stores(settings)
    fetcher = oldside.import_fetcher(settings, options.concurrency)
    journal = Journal(options.state or settings.data_dir / "imports" / f"{options.api_key}.jsonl")
    try:
        app = await providers.app(options.api_key)
        providers.provider_for(app, options.provider)  # an unknown provider fails here, once
        async with registry.exclusive(f"import:{app.api_key}") as mine:
            if not mine:
                raise errors.Conflict("another import into this app is running")
            await keephandle.discard_pending(registry, providers, app, [e.handle for e in entries])
            journal.open()
            importer = Importer(registry, providers, fetcher, old, app, options, journal)
            return await importer.run(entries, on_outcome)
    finally:
        journal.close()
        await fetcher.close()
        await providers.close()
        await registry.close()
