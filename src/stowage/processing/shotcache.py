"""URL screenshots kept for a while (``screenshot_cache_seconds``): a page changes, so a
drawing is a derivative that expires, unlike a stored file's.

Key: ``.stowage-derivatives/_screenshots/<sha256 of the URL and the normalised chain>.<ext>``
in the derivative store (``cache.py``), so every node shares them. A screenshot has no
cookies and no credentials: the same URL and options draw the same page for every app,
so apps share a drawing as they share a URL source's copy (``urlsources.py``); each
request is still authorised first. A drawing older than the lifetime is drawn again in
place (one drawing per key at a time on a node), and its ETag names that drawing (the key
and the time it was written). ``cache=false`` (``cache.fresh()``) draws anew. Expired
drawings are removed in the background, at most once a lifetime per process.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable

from stowage import errors
from stowage.processing.base import Output
from stowage.processing.cache import PREFIX, DerivativeCache
from stowage.processing.results import Derivative, Spooled
from stowage.registry.base import App, FileRecord
from stowage.storage.base import Lists, ObjectInfo

FOLDER = f"{PREFIX}/_screenshots/"
log = logging.getLogger("stowage.processing")


class KeptScreenshots:
    def __init__(self, cache: DerivativeCache, seconds: int) -> None:
        self.cache = cache
        self.seconds = seconds  # 0: nothing kept
        self._swept = time.monotonic()
        self._sweeps: set[asyncio.Task[None]] = set()

    def key(self, url: str, chain_key: str, output: Output) -> str:
        digest = hashlib.sha256(f"{url}\n{chain_key}".encode()).hexdigest()[:40]
        return f"{FOLDER}{digest}.{output.extension}"

    async def derivative(
        self,
        url: str,
        chain_key: str,
        output: Output,
        app: App,
        draw: Callable[[], Awaitable[Spooled]],
    ) -> Derivative:
        """The kept drawing of ``url`` by the chain; drawn (by ``draw``) when there is
        none younger than the lifetime."""
        key = self.key(url, chain_key, output)

        async def drawn() -> ObjectInfo:
            result = await draw()
            try:
                return await self.cache.put(key, result.path, output.mimetype)
            finally:
                result.path.unlink(missing_ok=True)

        info = self._young(await self.cache.stat(key))
        if info is None:
            await self.cache.once(key, drawn)
            info = await self.cache.stat(key)  # what a write returns is not every store's
            if info is None:
                raise errors.StorageNotFound("the screenshot vanished after it was written")
        self._sweep_now_and_then()
        return self._answer(key, info, output, app)

    def _young(self, info: ObjectInfo | None) -> ObjectInfo | None:
        return info if info is not None and self._age(info) < self.seconds else None

    def _age(self, info: ObjectInfo) -> float:
        return max(0.0, time.time() - info.modified)

    def _answer(self, key: str, info: ObjectInfo, output: Output, app: App) -> Derivative:
        record = FileRecord(
            handle="",
            api_key=app.api_key,
            provider="",
            location="",
            container=self.cache.container,
            key=key,
            filename=f"screenshot.{output.extension}",
            mimetype=output.mimetype,
            size=info.size,
            uploaded=info.modified * 1000,
        )
        left = max(0, int(self.seconds - self._age(info)))
        etag = hashlib.sha256(f"{key}\n{info.modified!r}".encode()).hexdigest()[:32]
        local = self.cache.local_path(key)
        return Derivative(record, info, self.cache.provider, local, app, key, left, etag)

    def _sweep_now_and_then(self) -> None:
        if time.monotonic() - self._swept < max(self.seconds, 60):
            return
        self._swept = time.monotonic()
        task = asyncio.ensure_future(self._sweep())
        self._sweeps.add(task)
        task.add_done_callback(self._sweeps.discard)

    async def _sweep(self) -> None:
        provider, container = self.cache.provider, self.cache.container
        if not isinstance(provider, Lists):
            return
        try:
            async for key in provider.keys(container, FOLDER):
                with contextlib.suppress(errors.StorageNotFound):
                    # Twice the lifetime: never one a request is reading or drawing anew.
                    if self._age(await provider.stat(container, key)) > 2 * self.seconds:
                        await provider.delete(container, key)
        except Exception:
            log.warning("could not remove expired screenshots", exc_info=True)

    async def close(self) -> None:
        for task in list(self._sweeps):
            await asyncio.wait([task], timeout=5)
