"""Derivatives, kept in the default store so that every node shares them.

Key: ``.stowage-derivatives/<api key>/<handle>/v<version>-<sha256>-r<rendering>-<chain
digest>.<ext>``: one folder per handle, so the first derivative of a file makes one
folder, not two. ``RENDERING`` is bumped by a release whose fix changes what a URL
renders: derivatives made before are then not served again but made anew on their next
request, and the old ones are removed with the file's next version or its delete.
The version part comes from the file's row: an overwrite bumps the version and a delete
removes the row, so a derivative of an old version is unreachable the moment the write
has answered, without touching the store. The old bytes are removed afterwards, in the
background (``purge``). Derivatives have no handle and no row: they are never files,
never in listings.

Concurrent first requests for one derivative on a node compute it once (``once``).
Within ``fresh()`` (the ``cache=false`` task) the first lookup of each key misses, so the
derivative is rendered anew and replaces the stored one, as the hosted service's
documentation says of ``cache=false``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hashlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from stowage import errors
from stowage.core import streams
from stowage.registry.base import FileRecord
from stowage.storage.base import Adopts, Lists, LocalFiles, ObjectInfo, Provider, WriteOptions

PREFIX = ".stowage-derivatives"
#: 2: no task turns an image by its EXIF orientation (crop_faces, smart_crop after
#: another task and collage cells did), and the Pillow path's sizes are libvips' own.
#: 3: a result saved without its colour profile is turned into sRGB first, smart_crop
#: given one side rounds the other as resize does, tasks that mix neighbours weight
#: colours by alpha, blackwhite keeps the alpha band, and files placed together are
#: put in sRGB.
#: 4: one side given, every format derives the other from the source's own sides (a
#: WebP or JPEG shrunk on load was a pixel off), PNG results use adaptive row filters,
#: an animation is cut where its first frame is (crop_faces, smart_crop, align:faces),
#: rotate=exif:false sets orientation 1, pjpg=metadata:false strips, quality:input and
#: colorspace:input do what they say, and the quality task never makes a file larger.
#: 5: a colour a task draws keeps its alpha (circle, rounded_corners, output background)
#: and is drawn in colour on a grey image (border, rotate, circle, rounded_corners); a
#: watermark under a pixel at its size is one pixel, not its full size; a stripped AVIF
#: or TIFF holds no orientation; animate with one side given keeps the first image's
#: proportion, a still format holds its first frame, and a turn by EXIF is made on each
#: file before it is framed.
#: 6: a frame grown to a whole multiple of its height is resized as one frame, a GIF's
#: frame gets its own palette (not the previous frame's, which shifted a whole frame's
#: colour by 20-30 levels), smart_crop's cover is held to the side limit, align:faces
#: looks for faces at the finder's size (a small cut's cover hid them).
#: 7: a 16-bit grey source is 8-bit grey through every chain (a flip made it sRGB); a
#: result carries no metadata its source did not have (libvips' savers wrote an Exif
#: block of their own); the quality task alone answers an AVIF as it is; overlapping
#: partial_pixelate and partial_blur boxes keep every pixel inside any box's shape
#: hidden (a later box's ellipse or feathered edge put the source's pixels back);
#: border draws its background (by default its colour) under the picture; blur's and
#: sharpen's amount is a whole number, as the SDK schema types it (a decimal is rounded
#: half up: amount:1.5 was a sigma of 1.5, now 2); the Pillow path writes no Exif its
#: source lacked and hands IPTC to libvips, a TIFF result keeps the source's Exif, and a
#: JPEG 2000 source shows its ICC profile; pixelate, partial_pixelate and pixelate_faces
#: put every pixel in a block of ``amount`` x ``amount`` cut at the edges (the last
#: columns and rows were left as they were, and a box narrower than ``amount`` had
#: square blocks of its short side); partial_blur's feathered edge mixes in no colour of
#: a fully transparent pixel; /<APIKEY>/<URL> with no processing task is the URL's file
#: as it is (it was re-encoded, a text drawn). 8: ``compress`` alone answers the source
#: when saving it again gives no smaller file (a palette PNG grew by half); the metadata
#: task's answer holds the file's own fields (size, hashes, ...: they were missing).
#: 9: every size the engine derives is rounded half up, not to even (a polaroid frame
#: of 6% of a 75-px side is 5 px, partial_pixelate=amount:2.5 blocks of 3, animate's
#: derived side as resize's, ascii's rows, pixelate_faces' blocks, face boxes).
#: 10: faces (and red eyes) are looked for in a photo as its Exif orientation shows it
#: (a portrait photo stored sideways, tag 6, had none found).
#: 11: animate=fit:crop keeps the part its align names (every frame was cut in its middle).
#: 12: a side derived from an enlarging scale at exactly half a pixel rounds up, as
#: libvips' resize makes it (animate's frames, the Pillow path's resize were a pixel short).
RENDERING = 12
CHUNK = 256 * 1024
log = logging.getLogger("stowage.processing")
T = TypeVar("T")
_CLOSE_SECONDS = 5.0
#: Inside ``fresh()``: the keys looked up once already (the second lookup, after the
#: render, must see the new object).
_FRESH: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar(
    "stowage_fresh_render", default=None
)


@contextlib.contextmanager
def fresh() -> Iterator[None]:
    """Derivatives asked for inside are rendered anew, not served from the cache."""
    token = _FRESH.set(set())
    try:
        yield
    finally:
        _FRESH.reset(token)


def version_of(record: FileRecord) -> str:
    return f"v{record.version}-{(record.sha256 or 'nosha')[:16]}"


class DerivativeCache:
    def __init__(self, provider: Provider) -> None:
        self.provider = provider
        self.container = provider.default_container
        # Once: an isinstance of a runtime protocol checks each of its members (about
        # 5 us, on every cached answer's path).
        self._local = provider if isinstance(provider, LocalFiles) else None
        self._adopts = provider if isinstance(provider, Adopts) else None
        self._flights: dict[str, asyncio.Future[Any]] = {}
        self._purges: set[asyncio.Task[None]] = set()

    def key(self, record: FileRecord, chain_key: str, extension: str) -> str:
        digest = hashlib.sha256(chain_key.encode()).hexdigest()[:40]
        return f"{current_prefix(record)}{digest}.{extension}"

    async def stat(self, key: str) -> ObjectInfo | None:
        looked = _FRESH.get()
        if looked is not None and key not in looked:
            looked.add(key)
            return None  # cache=false: a miss, whatever is stored
        try:
            return await self.provider.stat(self.container, key)
        except errors.StorageNotFound:
            return None

    def local_path(self, key: str) -> Path | None:
        if self._local is not None:
            return self._local.local_path(self.container, key)
        return None

    async def put(self, key: str, source: Path, mimetype: str, synced: bool = False) -> ObjectInfo:
        """``source`` (a finished file of the spool) stored at ``key``: renamed into a
        local cache on its file system (no copy: ``source`` is gone then), else copied.
        ``synced``: its data already are (a job process's result, ``jobfiles.settle``)."""
        if self._adopts is not None:
            adopted = await self._adopts.adopt(self.container, key, source, synced)
            if adopted is not None:
                return adopted
        options = WriteOptions(content_type=mimetype)
        return await self.provider.write(self.container, key, file_chunks(source), options)

    def open(self, key: str) -> AsyncIterator[bytes]:
        return self.provider.open(self.container, key)

    async def made(self, key: str, make: Callable[[], Awaitable[ObjectInfo]]) -> ObjectInfo | None:
        """``make`` run ``once`` (it ends with ``put``); then what is stored at ``key``. A
        local store's answer to ``put`` is the file's own stat; another store's answer may
        differ from a later ``stat`` (an object store's ETag), so that one is asked."""
        made = await self.once(key, make)
        return made if self._local is not None else await self.stat(key)

    async def once(self, key: str, make: Callable[[], Awaitable[T]]) -> T:
        """One computation per key at a time on this node; the others wait for it. It is
        shielded: a client going away does not stop the work the others wait for."""
        flight = self._flights.get(key)
        if flight is None:
            flight = asyncio.ensure_future(make())
            self._flights[key] = flight
            flight.add_done_callback(lambda done: self._landed(key, done))
        result: T = await asyncio.shield(flight)
        return result

    def _landed(self, key: str, done: asyncio.Future[Any]) -> None:
        self._flights.pop(key, None)
        if not done.cancelled():
            done.exception()  # retrieved: every waiter may have gone before it failed

    def forget(self, record: FileRecord, keep: FileRecord | None) -> None:
        """Remove, in the background, every derivative of ``record``'s handle but those of
        ``keep`` (the version now current, or None after a delete)."""
        task = asyncio.ensure_future(self._purge(record, keep))
        self._purges.add(task)
        task.add_done_callback(self._purges.discard)

    async def _purge(self, record: FileRecord, keep: FileRecord | None) -> None:
        if not isinstance(self.provider, Lists):
            return
        folder = _folder(record)
        # Keys of another version or rendering, and of the layout before (``<version>/``).
        current = current_prefix(keep) if keep is not None else None
        try:
            async for key in self.provider.keys(self.container, folder):
                if current is None or not key.startswith(current):
                    await delete(self.provider, self.container, key)
        except Exception:
            log.warning("could not remove old derivatives of %s", record.handle, exc_info=True)

    async def close(self) -> None:
        """Ends the computations in flight (their jobs are stopped: nobody is left to
        answer) and lets the purges finish, each for a few seconds at most."""
        for flight in list(self._flights.values()):
            flight.cancel()
        pending = [*self._flights.values(), *self._purges]
        if pending:
            await asyncio.wait(pending, timeout=_CLOSE_SECONDS)


def current_prefix(record: FileRecord) -> str:
    """What the keys of the record's derivatives made by this release start with."""
    return f"{_folder(record)}{version_of(record)}-r{RENDERING}-"


def _folder(record: FileRecord) -> str:
    return f"{PREFIX}/{record.api_key}/{record.handle}/"


async def delete(provider: Provider, container: str, key: str) -> None:
    with contextlib.suppress(errors.StorageNotFound):  # already gone: what we wanted
        await provider.delete(container, key)


def file_chunks(path: Path) -> AsyncIterator[bytes]:
    """A file of this node's disk, read in chunks (a result to store)."""
    return streams.file_chunks(path, CHUNK)
