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
Run = Callable[
    [Path, Chain, Output, Path, tuple[tuple[str, Path], ...], Kind | None], Awaitable[None]
]


@dataclass(frozen=True)
class External:
    """What URL sources take from the processor: its app lookup, store operation, policy
    check and job runner, and the places files are read and kept."""

    app_of: Callable[[str | None], Awaitable[App]]
    store: Store
    authorize: Callable[[App, Credentials, Target], None]
    run: Run
    spool: Spool
    url_sources: UrlSources
    shots: screenshots.Screenshots
    kept_shots: KeptScreenshots

    async def transformed(
        self,
        api_key: str | None,
        url: str,
        segments: list[str],
        creds: Credentials,
        before: Charge | None = None,
    ) -> Spooled:
        """The tasks' result of ``url``, spooled: the caller sends it and removes it.
        ``before``: called with the app once authorised, before the fetch."""
        chain = chains.parse(segments)
        app = await self.app_of(api_key)
        self.authorize(app, creds, Target(url=url))
        return await self._spooled(url, chain, app, before)

    async def kept_screenshot(
        self,
        api_key: str | None,
        url: str,
        segments: list[str],
        creds: Credentials,
        before: Charge | None = None,
    ) -> Derivative | None:
        """A ``urlscreenshot`` chain's result, kept a while (``shotcache.py``); None when
        the chain draws no page or nothing is kept (``screenshot_cache_seconds`` 0).
        ``before`` is called only when the page is drawn: a kept one costs nothing."""
        chain = chains.parse(segments)
        if screenshots.task_of(chain) is None or not self.kept_shots.seconds:
            return None
        app = await self.app_of(api_key)
        self.authorize(app, creds, Target(url=url))
        output = chains.output_for(screenshots.without(chain), "image/png")
        draw = functools.partial(self._spooled, url, chain, app, before)
        return await self.kept_shots.derivative(url, chain.key(), output, app, draw)

    async def stored(
        self,
        api_key: str | None,
        url: str,
        segments: list[str],
        creds: Credentials,
        before: Charge | None = None,
    ) -> FileRecord:
        """``/<APIKEY>/[tasks/]store/<URL>``: the URL's file, or the tasks' result of it,
        becomes a new file (store's own check of the policy: ``store`` and its ``url``)."""
        chain = chains.parse(segments)
        task = chain.store
        assert task is not None
        if not chain.tasks:  # the file as it is: store-from-URL
            if before is not None:
                await before(await self.app_of(api_key))
            source = Source(url=url, filename=_text(task.get("filename")))
            return await stored(self.store, api_key, task, source, None, creds)
        made = await self.transformed(api_key, url, segments, creds, before)
        try:
            name = _text(task.get("filename")) or f"file.{made.output.extension}"
            mimetype = made.output.mimetype
            source = Source(chunks=file_chunks(made.path), filename=name, content_type=mimetype)
            return await stored(self.store, api_key, task, source, mimetype, creds)
        finally:
            made.path.unlink(missing_ok=True)

    async def _spooled(
        self, url: str, chain: Chain, app: App, before: Charge | None = None
    ) -> Spooled:
        if before is not None:
            await before(app)
        shot = screenshots.task_of(chain)  # the page drawn, not its file read
        source = self.shots.opened(url, shot) if shot else self.url_sources.opened(url)
        async with source as held:
            chain = screenshots.without(chain)
            mimetype = held.content_type
            output, kind = chains.output_for(chain, mimetype), kind_of(mimetype, url)
            dest = self.spool.new("." + output.extension)
            try:
                await self.run(held.path, chain, output, dest, (), kind)
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
