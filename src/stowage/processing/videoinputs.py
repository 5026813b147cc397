"""What a conversion reads into its job folder before ffmpeg runs: the source file, and a
watermark image (``watermark_url``: a handle of the same app, read from its storage, or
a URL fetched through the guarded fetcher: public addresses only, size-limited). ffmpeg
is only ever given these files, never a URL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

from stowage import errors
from stowage.core import names
from stowage.core.fetch import Fetcher
from stowage.core.providers import Providers
from stowage.processing import ffmpeg, readable, video
from stowage.processing.ffmpeg import Limits, MediaRefused
from stowage.processing.prober import Prober
from stowage.registry.base import App, FileRecord, FileRows

WATERMARK_MAX_BYTES = 20 * 1024 * 1024
_OPTION = f"{video.NAME}.watermark_url"


class Inputs:
    def __init__(self, files: FileRows, providers: Providers, fetcher: Fetcher | None) -> None:
        self.files, self.providers, self.fetcher = files, providers, fetcher

    async def check(self, plan: video.Plan, api_key: str) -> None:
        """At the request, before a job exists: the watermark names a file of the app or
        a URL the fetcher may open (a 400 or 403 otherwise)."""
        if plan.watermark is None:
            return
        source = plan.watermark.source
        if names.is_handle(source):
            await self._record(source, api_key)
            return
        if self.fetcher is None:
            raise _bad("watermark images are read from handles only on this node")
        try:
            self.fetcher.check_url(source)
        except errors.InvalidUrl as exc:
            raise _bad(f"must be a handle or an http(s) URL ({exc.message})") from exc

    async def source(self, app: App, record: FileRecord, path: Path, max_bytes: int) -> None:
        provider = self.providers.provider_for(app, record.provider)
        await save(provider.open(record.container, record.key), path, max_bytes)

    async def watermark(
        self, app: App, plan: video.Plan, path: Path, limits: Limits, prober: Prober
    ) -> None:
        """The plan's watermark image saved at ``path`` and checked as one still image."""
        if plan.watermark is None:
            return
        source = plan.watermark.source
        if names.is_handle(source):
            record = await self._record(source, app.api_key)
            await self.source(app, record, path, WATERMARK_MAX_BYTES)
        else:
            if self.fetcher is None:
                raise MediaRefused("this node fetches no watermark URLs")
            # a background job: it waits fetch_background_slot_wait for a slot, not the
            # few seconds a client is kept waiting before 503 FETCH_BUSY
            fetched = await self.fetcher.open(source, owner=app.api_key, background=True)
            await save(fetched.chunks, path, WATERMARK_MAX_BYTES)
        mark = await ffmpeg.probe(path, limits, prober, formats=video.WATERMARK_DEMUXERS)
        if mark.first("video") is None or len(mark.streams) != 1:
            raise MediaRefused("the watermark is not one image")

    async def _record(self, handle: str, api_key: str) -> FileRecord:
        record = await self.files.get(handle)
        if record is None or record.api_key != api_key:  # another app's file is not seen
            raise _bad("names no file of this app")
        return record


def _bad(reason: str) -> errors.InvalidParameter:
    return errors.InvalidParameter(f"{_OPTION}: {reason}", parameter=_OPTION)


async def save(chunks: AsyncIterator[bytes], path: Path, max_bytes: int) -> None:
    """``chunks`` written to ``path``; ``MediaRefused`` past ``max_bytes``."""
    try:
        await readable.save(chunks, path, max_bytes)
    except errors.PayloadTooLarge as exc:
        raise MediaRefused(f"the file is larger than {max_bytes} bytes") from exc
