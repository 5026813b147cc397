"""A conversion's result stored through the ordinary store path: one file, or for an HLS
preset a set (every segment, then the playlist naming them by their CDN URLs).

The set is one derivative: the job's result names the playlist (``handle``, the status
answer's ``data.url``) and every segment (``segments``), and the set is removed as one
when the source changes or the job's lease was lost. A set stored in part (a failed
store) is removed before the error goes on.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stowage.core import streams
from stowage.core.security import Credentials
from stowage.core.service import StoreParams
from stowage.core.sources import Source
from stowage.core.uploads import Store, provider_for_location
from stowage.processing import video
from stowage.processing.base import Task
from stowage.processing.ffmpeg import MediaRefused
from stowage.registry.base import App, FileRecord

_CHUNK = 1024 * 1024
SEGMENT_TYPE = "video/mp2t"
#: A segment line of a playlist ffmpeg wrote here (``video.SEGMENT_NAME``'s names).
_SEGMENT = re.compile(r"segment\d{5}\.ts")
MAX_SEGMENTS = 5000  # 8 hours of 6-second segments
#: (the result's row) -> its public URL.
UrlOf = Callable[[FileRecord], str]
#: Removes stored results of an app: (handles, api_key).
Forget = Callable[[list[str], str], Awaitable[None]]


@dataclass(frozen=True)
class Stored:
    """The stored result: its row (a playlist's for HLS), and the segments' handles."""

    record: FileRecord
    segments: tuple[str, ...] = ()
    size: int = 0  # bytes of the whole set
    stills: tuple[tuple[str, FileRecord], ...] = ()  # (name, row): ``videothumbs.py``

    @property
    def handles(self) -> list[str]:
        return [self.record.handle, *self.segments, *(row.handle for _, row in self.stills)]


class Results:
    def __init__(self, store: Store, url_of: UrlOf, forget: Forget) -> None:
        self.store, self.url_of, self.forget = store, url_of, forget

    async def save(
        self,
        app: App,
        record: FileRecord,
        task: Task,
        plan: video.Plan,
        dest: Path,
        stills: tuple[tuple[str, Path], ...] = (),
    ) -> Stored:
        """``dest`` (and, for HLS, the segments it names) stored as the app's files, and
        its ``stills`` (JPEGs) beside it, all at once (each store waits on its own
        writes); what was stored is removed again on a failure."""
        stem = _filename(record, task, plan).rsplit(".", 1)[0]
        works: list[Awaitable[Stored | FileRecord]] = [self._result(app, record, task, plan, dest)]
        for name, path in stills:
            works.append(
                self._one(app, task, path, f"{stem}-{name}.jpg", "image/jpeg", folder=True)
            )
        tasks = [asyncio.ensure_future(work) for work in works]
        try:
            done = await asyncio.gather(*tasks, return_exceptions=True)
            if failed := [d for d in done if isinstance(d, BaseException)]:
                raise failed[0]
        except BaseException:  # failed or cancelled (gather ends once every store has)
            ended = [t for t in tasks if t.done() and not t.cancelled() and not t.exception()]
            await self.forget([h for t in ended for h in _handles(t.result())], app.api_key)
            raise
        result, rows = done[0], [r for r in done[1:] if isinstance(r, FileRecord)]
        assert isinstance(result, Stored)
        names = [name for name, _ in stills]
        return dataclasses.replace(result, stills=tuple(zip(names, rows, strict=True)))

    async def _result(
        self, app: App, record: FileRecord, task: Task, plan: video.Plan, dest: Path
    ) -> Stored:
        if plan.preset.muxer == "hls":
            return await self._hls(app, record, task, plan, dest)
        name = _filename(record, task, plan)
        stored = await self._one(app, task, dest, name, plan.mimetype)
        return Stored(stored, size=dest.stat().st_size)

    async def _hls(
        self, app: App, record: FileRecord, task: Task, plan: video.Plan, playlist: Path
    ) -> Stored:
        lines = playlist.read_text("utf-8").splitlines()
        names = segments_of(playlist)
        stem = _filename(record, task, plan).rsplit(".", 1)[0]
        urls: dict[str, str] = {}
        made: list[str] = []
        size = 0
        try:
            for n, name in enumerate(names):
                segment = playlist.parent / name
                size += segment.stat().st_size
                row = await self._one(
                    app, task, segment, f"{stem}-{n:05d}.ts", SEGMENT_TYPE, folder=True
                )
                made.append(row.handle)
                urls[name] = self.url_of(row)
            rewritten = playlist.with_name("public.m3u8")
            rewritten.write_text("\n".join(urls.get(line, line) for line in lines) + "\n")
            size += rewritten.stat().st_size
            head = await self._one(app, task, rewritten, f"{stem}.m3u8", plan.mimetype)
        except BaseException:
            if made:
                await self.forget(made, app.api_key)
            raise
        return Stored(head, tuple(made), size)

    async def _one(
        self,
        app: App,
        task: Task,
        path: Path,
        filename: str,
        mimetype: str,
        *,
        folder: bool = False,
    ) -> FileRecord:
        """One file through the store path, with the task's storage options. A segment
        (``folder``) goes beside a named ``path``, not onto it: a set has many files."""
        key = _text(task.get("path"))
        if folder and key and not key.endswith("/"):
            key = key.rsplit("/", 1)[0] + "/" if "/" in key else None
        source = Source(chunks=_chunks(path), filename=filename, content_type=mimetype)
        params = StoreParams(
            filename=filename,
            mimetype=mimetype,
            path=key,
            container=_text(task.get("container")),
            access=str(task.get("access") or "public"),
        )
        location = provider_for_location(_text(task.get("location")))
        return await self.store(app.api_key, location, source, params, app_creds(app))


def segments_of(playlist: Path) -> list[str]:
    """The segment files an HLS playlist ffmpeg wrote here names: only its own names
    (``segment00000.ts``...) in its folder, checked before anything reads the playlist."""
    lines = playlist.read_text("utf-8", "replace").splitlines()
    names = [line for line in lines if line and not line.startswith("#")]
    if not names or not all(_SEGMENT.fullmatch(n) for n in names):
        raise MediaRefused("ffmpeg wrote an HLS playlist without its segments")
    if len(names) > MAX_SEGMENTS:
        raise MediaRefused(f"the HLS result has more than {MAX_SEGMENTS} segments")
    if not all((playlist.parent / n).is_file() for n in names):
        raise MediaRefused("a segment of the HLS result is missing")
    return names


def still_size(path: Path) -> tuple[int, int]:
    """A thumbnail's width and height from its PNG or JPEG header (what ffmpeg wrote here
    from the plan): read in Python, so that a thumbnail needs no second probe of a file
    our ffmpeg wrote. ``MediaRefused`` for anything else."""
    with path.open("rb") as handle:
        head = handle.read(_STILL_HEAD)
    if head.startswith(b"\x89PNG\r\n\x1a\n") and head[12:16] == b"IHDR":
        width, height = struct.unpack(">II", head[16:24])
        return width, height
    at = 2 if head.startswith(b"\xff\xd8") else len(head)
    while at + 9 <= len(head) and head[at] == 0xFF:
        marker, length = head[at + 1], int.from_bytes(head[at + 2 : at + 4], "big")
        if marker in _SOF:  # a frame header: precision, height, width
            height, width = struct.unpack(">HH", head[at + 5 : at + 9])
            return width, height
        at += 2 + length
    raise MediaRefused("the thumbnail ffmpeg made has no PNG or JPEG header")


#: JPEG's start-of-frame markers (not DHT, JPG and DAC, which share the range).
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
_STILL_HEAD = 64 * 1024  # ffmpeg's JPEG headers (tables included) are a few hundred bytes


def _handles(made: Stored | FileRecord) -> list[str]:
    return made.handles if isinstance(made, Stored) else [made.handle]


def result_handles(made: dict[str, object]) -> list[str]:
    """Every stored file of a job's result (its ``handle``, any ``segments`` and the
    handles of its ``thumbs``)."""
    segments = made.get("segments") or []
    handles = [str(made["handle"])] if made.get("handle") else []
    handles += [str(s) for s in segments] if isinstance(segments, list) else []
    thumbs = made.get("thumbs") or {}
    handles += [str(t["handle"]) for t in thumbs.values()] if isinstance(thumbs, dict) else []
    return handles


def thumb_urls(made: dict[str, Any]) -> dict[str, str]:
    """The status answer's ``data.thumb``... of a job's result (none for audio)."""
    return {name: str(t["url"]) for name, t in (made.get("thumbs") or {}).items()}


def thumbs(stored: Stored, url_of: UrlOf) -> dict[str, Any]:
    """The stills of a result as the job's result keeps them: name -> handle and URL."""
    return {n: {"handle": r.handle, "url": url_of(r)} for n, r in stored.stills}


def app_creds(app: App) -> Credentials:
    """The worker acts for the app: the request that queued the job was authorised."""
    return Credentials(basic_user="app", basic_secret=app.secret) if app.secret else Credentials()


def _filename(record: FileRecord, task: Task, plan: video.Plan) -> str:
    stem = record.filename.rsplit(".", 1)[0] or "file"
    return str(task.get("filename") or f"{stem}.{plan.extension}")


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _chunks(path: Path) -> AsyncIterator[bytes]:
    return streams.file_chunks(path, _CHUNK)
