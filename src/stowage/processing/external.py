"""External sources: a transformation of a URL (``/<APIKEY>/<tasks>/<URL>``), a kept
``urlscreenshot`` of one, and the store of either as a new file. No HTTP here.

Every request passes the app's policy (its ``url`` rule) before anything is fetched;
the source is read through the URL guard and the kept copies (``urlsources.py``), and
rendered in the processor's job pool. A list of URLs (``/<APIKEY>/animate/[u1,u2]``)
is read as a list of handles is: each URL authorised, the sources counted and their
bytes held to the same limits, then one job with every source. The result is not
kept (but a screenshot, for a while): each request runs a job, so each is charged to
its app (``Charge``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

from stowage import errors
from stowage.core import dispositions, filetypes
from stowage.core.security import Credentials, Target, url_target
from stowage.core.service import StoreParams
from stowage.core.sources import Source
from stowage.core.uploads import Store, provider_for_location
from stowage.processing import archive, listfetch, screenshots, shotspec
from stowage.processing import chain as chains
from stowage.processing.base import Chain, Output, Task
from stowage.processing.cache import file_chunks
from stowage.processing.officeformats import Kind, kind_of
from stowage.processing.results import Derivative, Spooled
from stowage.processing.shotcache import KeptScreenshots
from stowage.processing.spool import Spool
from stowage.processing.urlsources import Held, UrlSources
from stowage.registry.base import App, FileRecord

Charge = Callable[[App], Awaitable[None]]  # a rate charge, once the app is known
Paths = tuple[tuple[str, Path], ...]  # other sources of a job: handle and file
#: (source, chain, output, dest, other sources, kind, how many of them a list names)
Run = Callable[[Path, Chain, Output, Path, Paths, Kind | None, int, str], Awaitable[bool]]
#: The sources' number and bytes, refused past the limits (``processing_max_sources*``).
Within = Callable[[int, int], None]
#: The stored files a URL source's tasks name, read for its job; the URL sources already
#: read (their number and bytes) count with them against the limits.
Named = Callable[[Chain, Credentials, str | None, Paths], AbstractAsyncContextManager[Paths]]
#: Those files looked up and authorised (404, 403), before any URL is fetched.
NamedChecked = Callable[[Chain, Credentials, str | None], Awaitable[None]]


@dataclass(frozen=True)
class UrlAsk:
    """One request for a URL source: whose app, the tasks, the credentials, and the rate
    charge to make once the app is known (``before``: each such request runs a job)."""

    api_key: str | None
    url: str  # the source; a list's first URL
    segments: list[str]
    creds: Credentials
    before: Charge | None = None
    listed: tuple[str, ...] = ()  # a list of URLs (repeats kept), or none


@dataclass(frozen=True)
class AsIs:
    """A URL's file as it is: where it is read from, its type and name, and whether its
    app's security makes it private."""

    path: Path
    mimetype: str
    filename: str
    private: bool


_OCTETS = "application/octet-stream"


@dataclass(frozen=True)
class External:
    """What URL sources take from the processor: its app lookup, store operation, policy
    check and job runner, and the places files are read and kept."""

    app_of: Callable[[str | None], Awaitable[App]]
    store: Store
    authorize: Callable[[App, Credentials, Target, str], None]  # ..., the call
    named: Named
    named_checked: NamedChecked
    within: Within
    run: Run
    spool: Spool
    url_sources: UrlSources
    shots: screenshots.Screenshots
    kept_shots: KeptScreenshots

    async def transformed(self, ask: UrlAsk) -> Spooled:
        """The tasks' result of the URL, spooled: the caller sends it and removes it."""
        chain, app = await self._authorized(ask)
        return await self._spooled(ask, chain, app)

    async def authorized(self, ask: UrlAsk) -> None:
        """Every URL the request names allowed by its policy, nothing fetched or run."""
        await self._authorized(ask, zipping=True)

    async def kept_screenshot(self, ask: UrlAsk) -> Derivative | None:
        """A ``urlscreenshot`` chain's result, kept a while (``shotcache.py``); None when
        the chain draws no page or nothing is kept (``screenshot_cache_seconds`` 0).
        ``before`` is called only when the page is drawn: a kept one costs nothing. The
        URL guard checks the page's address on every request, before a kept drawing is
        looked at: one drawn while private addresses were allowed is not served after."""
        if shotspec.task_of(chains.parse(ask.segments)) is None or not self.kept_shots.seconds:
            return None
        chain, app = await self._authorized(ask)
        await self.shots.checked(ask.url)
        output = chains.output_for(shotspec.without(chain), "image/png")
        draw = functools.partial(self._spooled, ask, chain, app)
        return await self.kept_shots.derivative(ask.url, chain.key(), output, app, draw)

    async def stored(self, ask: UrlAsk) -> FileRecord:
        """``/<APIKEY>/[tasks/]store/<URL>``: the URL's file, or the tasks' result of it,
        becomes a new file (store's own check of the policy: ``store`` and its ``url``)."""
        chain = chains.parse(ask.segments)
        task = chain.store
        assert task is not None
        if not chain.tasks:  # the file as it is: store-from-URL
            if ask.before is not None:
                await ask.before(await self.app_of(ask.api_key))
            source = Source(url=ask.url, filename=_text(task.get("filename")))
            return await stored(self.store, ask.api_key, task, source, None, ask.creds)
        made = await self.transformed(ask)
        try:
            stem = result_stem(made)
            name = _text(task.get("filename")) or f"{stem}.{made.output.extension}"
            mimetype = made.output.mimetype
            source = Source(chunks=file_chunks(made.path), filename=name, content_type=mimetype)
            return await stored(self.store, ask.api_key, task, source, mimetype, ask.creds)
        finally:
            made.path.unlink(missing_ok=True)

    @contextlib.asynccontextmanager
    async def as_is(self, ask: UrlAsk) -> AsyncIterator[AsIs]:
        """``/<APIKEY>/<URL>`` with no processing task: the URL's file as it is, read
        through the guard, the input limit and the kept copies, and typed and named as a
        store of it would be (``dispositions.filename``). A download, as of a stored
        file: the policy needs ``read`` (and its ``url`` rule, held to every address a
        redirect leads to)."""
        app = await self.app_of(ask.api_key)

        def allowed(url: str) -> None:
            self.authorize(app, ask.creds, url_target(url), "read")

        allowed(ask.url)
        if ask.before is not None:
            await ask.before(app)
        async with self.url_sources.opened(ask.url, allowed, app.api_key) as held:
            with held.path.open("rb") as handle:
                head = handle.read(filetypes.SNIFF_BYTES)
            name = held.filename or "file"  # as a store of it is named
            mimetype = filetypes.choose(None, held.content_type, head, name, _OCTETS)
            yield AsIs(held.path, mimetype, name, private=app.security)

    @contextlib.asynccontextmanager
    async def zipped(self, ask: UrlAsk) -> AsyncIterator[AsyncIterator[bytes]]:
        """``/<APIKEY>/zip/[u1,u2]`` (or one URL): every URL authorised and read, their
        number and bytes within the limits, before the archive's first byte (a failed
        fetch is an error answer, not a broken archive); then the archive of the files
        as read, each entry named after its URL's last part."""
        ask = ask if ask.listed else dataclasses.replace(ask, listed=(ask.url,))
        chain, app = await self._authorized(ask, zipping=True)
        if ask.before is not None:
            await ask.before(app)
        async with contextlib.AsyncExitStack() as stack:
            _, listed = await self._sources(stack, ask, chain, app)
            fallbacks = [f"file-{index}" for index in range(1, len(listed) + 1)]
            named = archive.names([url_filename(url) for url, _ in listed], fallbacks)
            openers = [functools.partial(file_chunks, path) for _, path in listed]
            yield archive.stream(list(zip(named, openers, strict=True)))

    async def _authorized(self, ask: UrlAsk, *, zipping: bool = False) -> tuple[Chain, App]:
        """The chain, and the app once its policy allows the URL (its ``url`` rule), or
        every URL of a list, and the files its tasks name exist, are the app's and are
        allowed: nothing is fetched for a request that names a file it cannot read."""
        chain = chains.parse(ask.segments)
        if ask.listed:
            if not zipping:
                _list_readable(chain)
            self.within(len(ask.listed) + len(chains.named_handles(chain)), 0)
        app = await self.app_of(ask.api_key)
        for url in dict.fromkeys(ask.listed or (ask.url,)):
            self.authorize(app, ask.creds, url_target(url), "convert")
        await self.named_checked(chain, ask.creds, ask.api_key)
        return chain, app

    async def _spooled(self, ask: UrlAsk, chain: Chain, app: App) -> Spooled:
        if ask.before is not None:
            await ask.before(app)
        async with contextlib.AsyncExitStack() as stack:
            held, listed = await self._sources(stack, ask, chain, app)
            fetched = listed or (("", held.path),)
            named = self.named(chain, ask.creds, ask.api_key, fetched)
            others = await stack.enter_async_context(named)
            mimetype = _source_type(held)
            made = functools.partial(self._run_into_spool, ask, held.path, mimetype, listed, others)
            dest, output = await chains.avif_or_lighter(shotspec.without(chain), mimetype, made)
        # a drawn page has no name of its own: its URL's last part names it
        source_name = url_filename(ask.url) if shotspec.task_of(chain) else held.filename
        return Spooled(dest, output, private=app.security, source_name=source_name)

    async def _run_into_spool(
        self,
        ask: UrlAsk,
        source: Path,
        mimetype: str,
        listed: tuple[tuple[str, Path], ...],
        others: tuple[tuple[str, Path], ...],
        chain: Chain,
    ) -> tuple[Path, Output]:
        output, kind = chains.made_output(chain, mimetype), kind_of(mimetype, ask.url)
        dest = self.spool.new("." + output.extension)
        try:
            url = ask.listed[0] if ask.listed else ask.url
            origin = "url:" + hashlib.sha256(url.encode()).hexdigest()  # as it is kept
            paths = listed + others
            await self.run(source, chain, output, dest, paths, kind, len(listed), origin)
        except BaseException:
            dest.unlink(missing_ok=True)
            raise
        return dest, output

    async def _sources(
        self, stack: contextlib.AsyncExitStack, ask: UrlAsk, chain: Chain, app: App
    ) -> tuple[Held, Paths]:
        """The URL (or the page a screenshot draws), or every URL of a list (each read
        once, several at once, in the list's order with its repeats, their bytes within
        the limit: ``listfetch``). The policy's ``url`` rule is held to every address a
        redirect leads to as well."""

        def allowed(url: str) -> None:
            self.authorize(app, ask.creds, url_target(url), "convert")

        shot = shotspec.task_of(chain)  # a shot: the page drawn, not read
        if not ask.listed:
            if shot:
                return await stack.enter_async_context(self.shots.opened(ask.url, shot)), ()
            opened = self.url_sources.opened(ask.url, allowed, app.api_key)
            return await stack.enter_async_context(opened), ()

        def opener(url: str, wait: float) -> AbstractAsyncContextManager[Held]:
            return self.url_sources.opened(url, allowed, app.api_key, slot_wait=wait)

        fetcher = self.url_sources.fetcher
        reading = (opener, self.within, fetcher.per_request, fetcher.slot_wait)
        held = await listfetch.read_listed(stack, ask.listed, *reading)
        return held[0], tuple((url, got.path) for url, got in zip(ask.listed, held, strict=True))


async def stored(
    store: Store,
    api_key: str | None,
    task: Task,
    source: Source,
    mimetype: str | None,
    creds: Credentials,
    made_from: str | None = None,
) -> FileRecord:
    """The ``store`` task's new file: ``source`` with the task's name, path, container,
    access and location; ``made_from``: the stored file it was made of (a policy for that
    handle stores it)."""
    decode = task.get("base64decode") is True  # was accepted and not applied
    params = StoreParams(
        # decoded, a default name (the source's) follows the decoded bytes' type
        filename=_text(task.get("filename")) if decode else source.filename,
        mimetype=None if decode else mimetype,  # the decoded bytes' type, sniffed
        path=_text(task.get("path")),
        container=_text(task.get("container")),
        access=str(task.get("access") or "private"),
        base64decode=decode,
        made_from=made_from,
    )
    location = provider_for_location(_text(task.get("location")))
    return await store(api_key, location, source, params, creds)


def _list_readable(chain: Chain) -> None:
    """A list of URLs is read by the tasks of a job (``animate``, ``pdfcreate``) or put
    in an archive (``zipped``, which the HTTP layer asks for a zip); a screenshot draws
    one page."""
    if archive.is_zip([t.name for t in chain.tasks]) or shotspec.task_of(chain):
        raise errors.InvalidParameter(
            "a list of URLs is read by animate, pdfcreate and zip (urlscreenshot draws "
            "one page; a zip of URLs is not stored)",
            parameter="sources",
        )


def _source_type(held: Held) -> str:
    """An image's type by its bytes (an S3 object is often sent as octet-stream, yet the
    result keeps the input's format and frames, as for a stored file); anything else as
    the origin named it (an Office file is a zip by its bytes)."""
    with held.path.open("rb") as handle:
        sniffed = filetypes.sniff(handle.read(filetypes.SNIFF_BYTES))
    return sniffed if sniffed is not None and sniffed.startswith("image/") else held.content_type


def url_filename(url: str) -> str:
    """The URL's last path part, percent-decoded, as a file's name ('' when it has none
    or only an extension: ``dispositions.url_part``), bounded and cleaned as a stored
    file's name is (``names.clean_filename``: 200 bytes, the extension kept): it is sent
    in ``Content-Disposition``, and a URL's last part of several KB made a header no
    client or proxy reads (aiohttp and nginx stop at 8 KB)."""
    return dispositions.url_part(PurePosixPath(urlsplit(url).path).name) or ""


def result_stem(made: Spooled) -> str:
    """A URL source's result's name without its extension: its source's, as a store of
    that is named (``dispositions.filename``), else ``file``."""
    return (made.source_name or "").rsplit(".", 1)[0] or "file"


def _text(value: object) -> str | None:
    return None if value is None else str(value)
