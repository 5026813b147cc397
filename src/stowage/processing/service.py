"""Transformations of stored files and of URLs: authorise, read the source, render it in
the job pool, keep the derivative, or store the result as a new file. No HTTP here.

Security: with the app's security on, a transformation needs a policy allowing the
``convert`` call (Filestack's rule), and ``store`` needs ``store`` as well (checked by
the store operation itself); a URL source must match the policy's ``url`` pattern.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from stowage import errors
from stowage.config import Settings
from stowage.core import events, reading
from stowage.core.events import Change
from stowage.core.fetch import Fetcher
from stowage.core.providers import Providers
from stowage.core.reading import VersionRows
from stowage.core.security import Credentials, Target, authorize, file_target, record_for
from stowage.core.sources import Source
from stowage.core.uploads import Store
from stowage.processing import (
    archive,
    joblimits,
    metrics,
    office,
    officejobs,
    readable,
    recordfields,
    screenshots,
)
from stowage.processing import chain as chains
from stowage.processing.base import Chain, Job, Output, Task
from stowage.processing.cache import DerivativeCache, version_of
from stowage.processing.external import Charge, External, stored
from stowage.processing.officeformats import Kind, kind_of
from stowage.processing.pool import pool_of
from stowage.processing.results import Derivative
from stowage.processing.shotcache import KeptScreenshots
from stowage.processing.spool import Spool
from stowage.processing.urlsources import UrlSources
from stowage.registry.base import App, FileRecord
from stowage.storage import build_provider
from stowage.storage.base import ObjectInfo, Provider


@dataclass(frozen=True)
class FilesAsk:
    """One request on stored files: a handle, or a ``[h1,h2]`` list (``handle`` is ""),
    the tasks, the credentials and API key, and the rate charge to make once the main
    file's app is known (``before``: cache=false runs a job every time)."""

    handle: str
    segments: list[str]
    creds: Credentials
    api_key: str | None
    handles: tuple[str, ...] = ()
    before: Charge | None = None

    @property
    def first(self) -> str:
        """The main file: the handle, or the list's first."""
        return self.handle or _first(self.handles)

    @property
    def listed(self) -> tuple[str, ...]:
        """The other sources a list names (the main one among them)."""
        return () if self.handle else self.handles


@dataclass(frozen=True)
class Core:
    """What the engine takes from the core: never the whole service."""

    settings: Settings
    files: VersionRows  # the rows, and whether an overwrite is under way (readable.py)
    providers: Providers
    fetcher: Fetcher
    store: Store  # the core's store operation, for the `store` task


class Processor:
    def __init__(self, core: Core) -> None:
        settings = core.settings
        self.core = core
        self.limits = joblimits.limits_of(settings)
        self.pool = pool_of(settings)
        self.office = office.converters_for(settings)  # Office documents' (officejobs.py)
        self.cache = DerivativeCache(_cache_store(core))
        self.spool = Spool(settings.data_dir / "tmp")
        self.url_sources = UrlSources(
            settings.data_dir / "url-sources",
            core.fetcher,
            readable.save,
            self.limits.max_input_bytes,
            settings.processing_url_sources_bytes,
        )
        self.screenshots = screenshots.Screenshots(settings, self.spool.new)
        self.kept_shots = KeptScreenshots(self.cache, settings.screenshot_cache_seconds)
        self.costly_avifs = chains.CostlyAvifs()
        self.external = External(
            core.providers.app,
            core.store,
            self._authorize,
            self.named_sources,
            self.named_checked,
            functools.partial(joblimits.within, settings),
            self._run,
            self.spool,
            self.url_sources,
            self.screenshots,
            self.kept_shots,
        )

    async def derivative(self, ask: FilesAsk) -> Derivative:
        """The tasks' result of a stored file (or of a list's files), kept as a derivative."""
        made, _ = await self.described(ask)
        return made

    async def described(self, ask: FilesAsk) -> tuple[Derivative, FileRecord]:
        """``derivative``, and the (first) source file's row: what a debug report tells."""
        made, record, _ = await self._made(ask, chains.parse(ask.segments))
        return made, record

    async def authorized(self, ask: FilesAsk) -> None:
        """Every file the request names authorised, nothing read or run: a debug report
        of a chain it does not run still answers refused credentials as they are."""
        record, _ = await self._authorized(ask.first, ask.creds, ask.api_key)
        for handle in dict.fromkeys(ask.listed):
            await self._authorized(handle, ask.creds, ask.api_key or record.api_key)

    async def archive_of(
        self, handles: tuple[str, ...], creds: Credentials, api_key: str | None
    ) -> tuple[App, AsyncIterator[bytes]]:
        """``zip/[h1,h2]``: every file authorised and within the limits before the first
        byte; then the archive, streamed (``archive.py``), an entry for each place a
        handle is listed; and the first file's app (a stored archive's)."""
        first, app = await self._authorized(_first(handles), creds, api_key)
        others = await self._others(chains.parse([]), handles, first, creds, api_key)
        named = archive.names([r.filename for _, r, _ in others], [h for h, _, _ in others])
        providers = self.core.providers
        entries = [
            (name, _opener(providers, owner, row))
            for name, (_, row, owner) in zip(named, others, strict=True)
        ]
        return app, archive.stream(entries)

    async def store(self, ask: FilesAsk) -> FileRecord:
        """The ``store`` task: the chain's result becomes a new file of the same app (the
        first listed file's app for a ``[h1,h2]`` source, read as ``derivative`` reads it)."""
        chain = chains.parse(ask.segments)
        task = chain.store
        if task is None:
            raise errors.InvalidParameter("the chain has no store task", parameter="store")
        creds = ask.creds
        if archive.is_zip([t.name for t in chain.tasks]):  # made by archive.py, not a job
            app, chunks = await self.archive_of(ask.handles or (ask.handle,), creds, ask.api_key)
            name = str(task.get("filename") or archive.NAME)
            source = Source(chunks=chunks, filename=name, content_type=archive.MIMETYPE)
            return await stored(
                self.core.store, app.api_key, task, source, archive.MIMETYPE, creds, ask.first
            )
        if not chain.tasks and not ask.handles:  # /store/<H>: a copy, not a render
            # A copy reads its source as the API's copy does: ``read``, not ``convert``.
            record, app = await self._authorized(ask.first, creds, ask.api_key, "read")
            if ask.before is not None:
                await ask.before(app)
            return await _copied(self.core, record, app, task, creds)
        made, record, app = await self._made(ask, chain)
        stem = record.filename.rsplit(".", 1)[0] or "file"
        filename = str(task.get("filename") or f"{stem}.{made.record.filename.rsplit('.')[-1]}")
        mimetype = made.record.mimetype
        source = Source(chunks=self.cache.open(made.key), filename=filename, content_type=mimetype)
        return await stored(
            self.core.store, app.api_key, task, source, mimetype, creds, record.handle
        )

    async def publish(self, change: Change) -> None:
        """As a change sink: an overwrite or a delete drops the old version's derivatives
        (in the background)."""
        if change.action == events.OVERWRITE and change.previous and change.record:
            self.cache.forget(change.previous, change.record)
        elif change.action == events.DELETE and change.record:
            self.cache.forget(change.record, None)

    async def close(self) -> None:
        await self.cache.close()
        await self.kept_shots.close()
        await self.pool.close()
        await self.office.close()

    # -- steps -----------------------------------------------------------------
    async def _made(self, ask: FilesAsk, chain: Chain) -> tuple[Derivative, FileRecord, App]:
        """Every source authorised (the main one's app charged, once) and within the
        limits, then the derivative, kept or made. A source overwritten between its row
        and its read (``readable``: ``StorageVersionChanged``) is read again from its new
        row, as a download is (``reading.MAX_ATTEMPTS``)."""
        return await reading.again_on_change(
            lambda attempt: self._made_once(ask if attempt == 0 else _uncharged(ask), chain)
        )

    async def _made_once(self, ask: FilesAsk, chain: Chain) -> tuple[Derivative, FileRecord, App]:
        record, app = await self._authorized(ask.first, ask.creds, ask.api_key)
        _exif_allowed(self.core.settings, chain, app, ask.creds, record)  # cached or not
        if ask.before is not None:
            await ask.before(app)
        others = await self._others(chain, ask.listed, record, ask.creds, ask.api_key)
        derivative = functools.partial(self._derivative, record, app)
        made = await chains.avif_or_lighter(
            chain,
            record.mimetype,
            lambda chain: derivative(chain, others, len(ask.listed)),
            self.costly_avifs,
            f"{record.handle}/{record.version}/{'/'.join(ask.listed)}/{chain.key()}",
        )
        return made, record, app

    async def _authorized(
        self, handle: str, creds: Credentials, api_key: str | None, call: str = "convert"
    ) -> tuple[FileRecord, App]:
        record = await record_for(self.core.files, self.core.providers.apps, handle, api_key)
        app = await self.core.providers.app(record.api_key)
        self._authorize(app, creds, file_target(record), call)
        return record, app

    def _authorize(
        self, app: App, creds: Credentials, target: Target, call: str = "convert"
    ) -> None:
        skew = self.core.settings.policy_clock_skew
        authorize(
            app.secret, creds, call, target, required=app.security, now=time.time(), skew=skew
        )

    async def _others(
        self,
        chain: Chain,
        listed: tuple[str, ...],
        record: FileRecord | None,
        creds: Credentials,
        api_key: str | None,
        outside: tuple[int, int] = (0, 0),
    ) -> tuple[Other, ...]:
        """The other sources a chain reads, in the list's order with its repeats (an
        animation's frames, a zip's entries are the list as written); each distinct
        file authorised once, like the main one. Their number and bytes are limited as
        the task uses them: a handle listed twice counts twice. ``record``: the main
        file, counted unless the list holds it; None for a URL source, whose files
        (``outside``: their number and bytes) count instead."""
        wanted = [*listed, *chains.named_handles(chain)]
        main = 0 if listed or record is None else 1
        joblimits.count_within(self.core.settings, len(wanted) + main + outside[0])
        # Without a key, the main file's app is the request's: another app's file is
        # none of its files (as under a key), whatever its own security says.
        owner = api_key or (record.api_key if record is not None else None)
        found = {h: await self._authorized(h, creds, owner) for h in dict.fromkeys(wanted)}
        main_bytes = record.size if record is not None and main else outside[1]
        joblimits.bytes_within(
            self.core.settings, main_bytes + sum(found[h][0].size for h in wanted)
        )
        return tuple((h, *found[h]) for h in wanted)

    async def _derivative(
        self,
        record: FileRecord,
        app: App,
        chain: Chain,
        others: tuple[Other, ...] = (),
        listed: int = 0,
    ) -> Derivative:
        """``others``: the files of a ``[h1,h2]`` source (its first ``listed``), then
        those the tasks name (watermark's, collage's)."""
        output = chains.made_output(chain, record.mimetype)
        versions = "".join(f"|{h}@{version_of(r)}" for h, r, _ in others)
        key = self.cache.key(record, chain.key() + versions, output.extension)
        info = await self.cache.stat(key)
        metrics.CACHE.inc(result="hit" if info is not None else "miss")
        if info is None:
            make = functools.partial(self._make, record, app, chain, output, key, others, listed)
            info = await self.cache.made(key, make)
            if info is None:
                raise errors.StorageNotFound("the derivative vanished after it was written")
        stem = record.filename.rsplit(".", 1)[0] or "file"
        shown = record.with_(  # where the response reads from: the derivative, not the file
            mimetype=output.mimetype,
            filename=f"{stem}.{output.extension}",
            container=self.cache.container,
            key=key,
        )
        return Derivative(shown, info, self.cache.provider, self.cache.local_path(key), app, key)

    async def _make(
        self,
        record: FileRecord,
        app: App,
        chain: Chain,
        output: Output,
        key: str,
        others: tuple[Other, ...] = (),
        listed: int = 0,
    ) -> ObjectInfo:
        joblimits.input_bytes_within(self.limits, record)
        provider = self.core.providers.provider_for(app, record.provider)
        with self.spool.held("." + output.extension) as dest:
            async with contextlib.AsyncExitStack() as stack:
                source = await stack.enter_async_context(self._readable(provider, record))
                sources = await self._read(stack, others)
                kind = kind_of(record.mimetype, record.filename)
                origin = f"{record.handle}@{version_of(record)}"
                synced = await self._run(source, chain, output, dest, sources, kind, listed, origin)
            if await recordfields.complete(dest, chain, self.core.settings, provider, record):
                synced = False  # written again here
            return await self.cache.put(key, dest, output.mimetype, synced=synced)

    @contextlib.asynccontextmanager
    async def named_sources(
        self,
        chain: Chain,
        creds: Credentials,
        api_key: str | None,
        fetched: tuple[tuple[str, Path], ...],
    ) -> AsyncIterator[tuple[tuple[str, Path], ...]]:
        """The stored files a URL source's tasks name (a watermark's, a collage's), each
        authorised like a stored source's and read for the job; the URLs ``fetched`` (the
        source, or a list's files) count with them, as a stored main file does."""
        outside = (len(fetched), sum(path.stat().st_size for _, path in fetched))
        others = await self._others(chain, (), None, creds, api_key, outside)
        async with contextlib.AsyncExitStack() as stack:
            yield await self._read(stack, others)

    async def named_checked(self, chain: Chain, creds: Credentials, api_key: str | None) -> None:
        """Each file a URL source's tasks name is the app's and allowed (404, 403), before
        the URL is fetched: an unknown watermark was refused after the origin was asked."""
        for handle in dict.fromkeys(chains.named_handles(chain)):
            await self._authorized(handle, creds, api_key)

    async def _read(
        self, stack: contextlib.AsyncExitStack, others: tuple[Other, ...]
    ) -> tuple[tuple[str, Path], ...]:
        """Each other source as a file for the job, held until ``stack`` closes; a handle
        listed twice is read once. Every size is checked before the first is read."""
        for _, row, _ in others:
            joblimits.input_bytes_within(self.limits, row)
        paths: dict[str, Path] = {}
        for handle, row, owner in others:
            if handle not in paths:
                read = self.core.providers.provider_for(owner, row.provider)
                paths[handle] = await stack.enter_async_context(self._readable(read, row))
        return tuple((handle, paths[handle]) for handle, _, _ in others)

    def _readable(
        self, provider: Provider, record: FileRecord
    ) -> contextlib.AbstractAsyncContextManager[Path]:
        limit, rows = self.limits.max_input_bytes, self.core.files
        return readable.readable(provider, record, self.spool, limit, rows)

    async def _run(
        self,
        source: Path,
        chain: Chain,
        output: Output,
        dest: Path,
        sources: tuple[tuple[str, Path], ...] = (),
        kind: Kind | None = None,
        listed: int = 0,
        origin: str = "",
    ) -> bool:
        """``officejobs.run``'s: whether a job process wrote ``dest`` (and synced it)."""
        started = time.monotonic()
        try:
            job = Job(source, chain, output, dest, self.limits, sources, listed, origin)
            synced = await officejobs.run(self.office, self.pool, job, kind, self.spool.new)
        except errors.StowageError as exc:
            metrics.JOBS.inc(outcome=exc.code)
            if exc.status != 503:
                metrics.REFUSALS.inc(code=exc.code)
            raise
        metrics.JOBS.inc(outcome="ok")
        metrics.SECONDS.observe(time.monotonic() - started)
        return synced


def _exif_allowed(
    settings: Settings, chain: Chain, app: App, creds: Credentials, record: FileRecord
) -> None:
    """A chain asking EXIF (``metadata=p:[exif]``) needs a policy naming ``exif`` whatever
    the app's security, as ``/api/file/<H>/metadata?exif=true`` does (spec 4.5)."""
    if not recordfields.asks_exif(chain):
        return
    skew = settings.policy_clock_skew
    target = file_target(record)
    authorize(app.secret, creds, "exif", target, required=True, now=time.time(), skew=skew)


def _cache_store(core: Core) -> Provider:
    shared = core.providers.shared_default_store()
    if shared is not None:
        return shared
    root = core.settings.data_dir / "derivatives"
    return build_provider({"type": "local", "root": str(root)}, core.settings.data_dir)


Other = tuple[str, FileRecord, App]  # another source: its handle, row and app


def _opener(providers: Providers, app: App, record: FileRecord) -> archive.Opener:
    provider = providers.provider_for(app, record.provider)
    return lambda: provider.open(record.container, record.key)


def _uncharged(ask: FilesAsk) -> FilesAsk:
    """``ask`` read again: its rate charge was made by the first reading."""
    return dataclasses.replace(ask, before=None)


def _first(handles: tuple[str, ...]) -> str:
    return handles[0] if handles else ""


async def _copied(
    core: Core, record: FileRecord, app: App, task: Task, creds: Credentials
) -> FileRecord:
    """The stored file as it is, as a new file (a JPEG was saved again, a text file drawn
    as a page): its bytes, name and type, the store task's options applied."""
    provider = core.providers.provider_for(app, record.provider)
    chunks = reading.whole(provider, record.container, record.key)
    filename = str(task.get("filename") or record.filename)
    source = Source(chunks=chunks, filename=filename, content_type=record.mimetype)
    return await stored(
        core.store, app.api_key, task, source, record.mimetype, creds, record.handle
    )
