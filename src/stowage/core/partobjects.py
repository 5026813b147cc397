"""Pieces of multipart uploads kept in the shared object store, so any node takes any piece.

A piece is the object ``.stowage-uploads/<upload_id>/<part>-<offset>-<tag>`` in the default
store's bucket (apps' own objects live under ``<api key>/``, which never starts with a dot).
The tag is the md5 the part URL signed, so a retried piece with other bytes never replaces
the object a registry row points at; without a signed md5 it is ``unsigned-<size>``, and a
retry may replace it, which reading notices: every piece is read back checked against the
size and md5 its row recorded, and a mismatch fails the completion (``INVALID_PARTS``)
instead of storing the wrong bytes. The provider's atomic write means a failed or
interrupted piece leaves nothing; listing the upload's prefix finds what crashed or retried
writes left, and it is removed with the upload.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import AsyncIterator

from stowage import errors
from stowage.core.partfiles import UPLOAD_ID
from stowage.registry.base import UploadPart
from stowage.storage.base import Lists, Provider, WriteOptions

PREFIX = ".stowage-uploads/"
_OPTIONS = WriteOptions()


class PartObjects:
    def __init__(self, store: Provider) -> None:
        if not isinstance(store, Lists):
            raise errors.StorageMisconfigured(f"{store.location} cannot hold upload parts")
        self.store = store
        self.lister: Lists = store
        self.container = store.default_container

    def describe(self) -> str:
        return f"{self.store.location} {self.container}/{PREFIX}"

    async def write(
        self,
        upload_id: str,
        part: int,
        offset: int,
        size: int,
        md5: str | None,
        chunks: AsyncIterator[bytes],
    ) -> UploadPart:
        tag = md5 or f"unsigned-{size}"
        piece = UploadPart(upload_id, part, offset, size, tag, "")
        check = _Check(size, md5)
        await self.store.write(self.container, self._key(piece), check.chunks(chunks), _OPTIONS)
        return UploadPart(upload_id, part, offset, size, tag, check.digest)

    async def read(self, pieces: list[UploadPart]) -> AsyncIterator[bytes]:
        for piece in pieces:
            check = _Check(piece.size, piece.etag, reading=piece.part)
            try:
                async for chunk in check.chunks(self.store.open(self.container, self._key(piece))):
                    yield chunk
            except errors.StorageNotFound as exc:
                raise errors.InvalidParts(f"part {piece.part} is missing", part=piece.part) from exc

    async def remove(self, upload_id: str) -> None:
        folder = self._folder(upload_id)
        async for key in self.lister.keys(self.container, folder):
            with contextlib.suppress(errors.StorageNotFound):
                await self.store.delete(self.container, key)

    async def upload_ids(self) -> set[str]:
        found: set[str] = set()
        async for key in self.lister.keys(self.container, PREFIX):
            upload_id = key.removeprefix(PREFIX).partition("/")[0]
            if UPLOAD_ID.fullmatch(upload_id):
                found.add(upload_id)
        return found

    def _folder(self, upload_id: str) -> str:
        if not UPLOAD_ID.fullmatch(upload_id):
            raise errors.UploadNotFound(upload_id=upload_id[:64])
        return f"{PREFIX}{upload_id}/"

    def _key(self, piece: UploadPart) -> str:
        return f"{self._folder(piece.upload_id)}{piece.part}-{piece.offset}-{piece.md5}"


class _Check:
    """Counts and hashes a piece as it streams, and fails the stream before its end is
    signalled when it is not what was announced, so the store never commits it."""

    def __init__(self, size: int, md5: str | None, reading: int | None = None) -> None:
        self.size = size
        self.md5 = md5
        self.reading = reading
        self.digest = ""

    async def chunks(self, source: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        md5 = hashlib.md5(usedforsecurity=False)
        received = 0
        async for chunk in source:
            received += len(chunk)
            if received > self.size:
                raise self._wrong_size(f">{self.size}")
            md5.update(chunk)
            yield chunk
        if received != self.size:
            raise self._wrong_size(received)
        self.digest = md5.hexdigest()
        if self.md5 is not None and self.digest != self.md5:
            raise self._wrong(errors.BadDigest("the part does not match its md5"))

    def _wrong_size(self, received: int | str) -> errors.StowageError:
        return self._wrong(errors.PartSizeMismatch(expected=self.size, received=received))

    def _wrong(self, error: errors.StowageError) -> errors.StowageError:
        if self.reading is not None:  # stored bytes that are not what the row recorded
            return errors.InvalidParts(f"part {self.reading} changed in storage", part=self.reading)
        return error
