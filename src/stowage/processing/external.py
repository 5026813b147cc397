"""External sources: a transformation of a URL (``/<APIKEY>/<tasks>/<URL>``), a kept
``urlscreenshot`` of one, and the store of either as a new file. No HTTP here.

Every request passes the app's policy (its ``url`` rule) before anything is fetched;
the source is read through the URL guard and the kept copies (``urlsources.py``), and
rendered in the processor's job pool. The result is not kept (but a screenshot, for a
while): each request runs a job, so each is charged to its app (``Charge``).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path

from stowage.core.security import Credentials, Target
from stowage.core.service import StoreParams
from stowage.core.sources import Source
from stowage.core.uploads import Store, provider_for_location
from stowage.processing import chain as chains
from stowage.processing import screenshots
from stowage.processing.base import Chain, Output, Task
from stowage.processing.cache import file_chunks
from stowage.processing.officeformats import Kind, kind_of
from stowage.processing.results import Derivative, Spooled
from stowage.processing.shotcache import KeptScreenshots
from stowage.processing.spool import Spool
from stowage.processing.urlsources import UrlSources
from stowage.registry.base import App, FileRecord

Charge = Callable[[App], Awaitable[None]]  # a rate charge, once the app is known
Paths = tuple[tuple[str, Path], ...]  # other sources of a job: handle and file
Run = Callable[[Path, Chain, Output, Path, Paths, Kind | None], Awaitable[None]]
#: The stored files the chain's tasks name (a watermark's), authorised and read.
Named = Callable[[Chain, Credentials, str | None], AbstractAsyncContextManager[Paths]]


@dataclass(frozen=True)
class UrlAsk:
    """One request for a URL source: whose app, the tasks, the credentials, and the rate
    charge to make once the app is known (``before``: each such request runs a job)."""

    api_key: str | None
    url: str
    segments: list[str]
    creds: Credentials
    before: Charge | None = None


@dataclass(frozen=True)
class External:
    """What URL sources take from the processor: its app lookup, store operation, policy
    check and job runner, and the places files are read and kept."""

    app_of: Callable[[str | None], Awaitable[App]]
    store: Store
    authorize: Callable[[App, Credentials, Target], None]
    named: Named
    run: Run
    spool: Spool
    url_sources: UrlSources
    shots: screenshots.Screenshots
    kept_shots: KeptScreenshots

    async def transformed(self, ask: UrlAsk) -> Spooled:
        """The tasks' result of the URL, spooled: the caller sends it and removes it."""
        chain, app = await self._authorized(ask)
        return await self._spooled(ask, chain, app)

    async def kept_screenshot(self, ask: UrlAsk) -> Derivative | None:
        """A ``urlscreenshot`` chain's result, kept a while (``shotcache.py``); None when
        the chain draws no page or nothing is kept (``screenshot_cache_seconds`` 0).
        ``before`` is called only when the page is drawn: a kept one costs nothing."""
        if screenshots.task_of(chains.parse(ask.segments)) is None or not self.kept_shots.seconds:
            return None
        chain, app = await self._authorized(ask)
        output = chains.output_for(screenshots.without(chain), "image/png")
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
            name = _text(task.get("filename")) or f"file.{made.output.extension}"
            mimetype = made.output.mimetype
            source = Source(chunks=file_chunks(made.path), filename=name, content_type=mimetype)
            return await stored(self.store, ask.api_key, task, source, mimetype, ask.creds)
        finally:
            made.path.unlink(missing_ok=True)

    async def _authorized(self, ask: UrlAsk) -> tuple[Chain, App]:
        """The chain, and the app once its policy allows the URL (its ``url`` rule)."""
        chain = chains.parse(ask.segments)
        app = await self.app_of(ask.api_key)
        self.authorize(app, ask.creds, Target(url=ask.url))
        return chain, app

    async def _spooled(self, ask: UrlAsk, chain: Chain, app: App) -> Spooled:
        if ask.before is not None:
            await ask.before(app)
        url, shot = ask.url, screenshots.task_of(chain)  # a shot: the page drawn, not read
        source = self.shots.opened(url, shot) if shot else self.url_sources.opened(url)
        async with self.named(chain, ask.creds, ask.api_key) as others, source as held:
            chain = screenshots.without(chain)
            mimetype = held.content_type
            output, kind = chains.output_for(chain, mimetype), kind_of(mimetype, url)
            dest = self.spool.new("." + output.extension)
            try:
                await self.run(held.path, chain, output, dest, others, kind)
            except BaseException:
                dest.unlink(missing_ok=True)
                raise
        return Spooled(dest, output, private=app.security)


async def stored(
    store: Store,
    api_key: str | None,
    task: Task,
    source: Source,
    mimetype: str | None,
    creds: Credentials,
) -> FileRecord:
    """The ``store`` task's new file: ``source`` with the task's name, path, container,
    access and location."""
    params = StoreParams(
        filename=source.filename,
        mimetype=mimetype,
        path=_text(task.get("path")),
        container=_text(task.get("container")),
        access=str(task.get("access") or "private"),
    )
    location = provider_for_location(_text(task.get("location")))
    return await store(api_key, location, source, params, creds)


def _text(value: object) -> str | None:
    return None if value is None else str(value)
