"""Where the pieces of multipart uploads wait on a node's disk: ``<folder>/<upload_id>/``.

Used when the default storage is local disk (or ``upload_parts_dir`` is set); a shared store
keeps them instead (``partobjects``), so any node of several takes any piece.

A piece is streamed to a temporary file, checked (size, md5), fsynced and renamed to
``<part>-<offset>-<md5>``: named by its content, so a retried piece never replaces the
bytes a registry row still points at, and a crash leaves at most a temporary file.
The folder goes away when its upload completes or expires.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import errno
import hashlib
import os
import re
import secrets
import shutil
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

from stowage import errors
from stowage.registry.base import UploadPart

READ_CHUNK = 256 * 1024
UPLOAD_ID = re.compile(r"[A-Za-z0-9_-]{16,64}")


def md5_hex(md5_b64: str | None) -> str | None:
    """The hex form of a base64 Content-MD5 value, or None when none was given."""
    if not md5_b64:
        return None
    try:
        raw = base64.b64decode(md5_b64.strip(), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise errors.InvalidParameter("md5 must be the base64 MD5 of the part") from exc
    if len(raw) != 16:
        raise errors.InvalidParameter("md5 must be the base64 MD5 of the part")
    return raw.hex()


class PartStore(Protocol):
    """Where pieces wait until their upload completes (a node's disk, or a shared store)."""

    def describe(self) -> str: ...

    async def write(
        self,
        upload_id: str,
        part: int,
        offset: int,
        size: int,
        md5: str | None,
        chunks: AsyncIterator[bytes],
    ) -> UploadPart: ...

    def read(self, pieces: list[UploadPart]) -> AsyncIterator[bytes]: ...

    async def remove(self, upload_id: str) -> None: ...

    async def upload_ids(self) -> set[str]: ...


class PartFiles:
    def __init__(self, root: Path) -> None:
        self.root = root

    def describe(self) -> str:
        return str(self.root)

    def folder(self, upload_id: str) -> Path:
        if not UPLOAD_ID.fullmatch(upload_id):
            raise errors.UploadNotFound(upload_id=upload_id[:64])
        return self.root / upload_id

    def path(self, piece: UploadPart) -> Path:
        return self.folder(piece.upload_id) / f"{piece.part}-{piece.offset}-{piece.md5}"

    async def write(
        self,
        upload_id: str,
        part: int,
        offset: int,
        size: int,
        md5: str | None,
        chunks: AsyncIterator[bytes],
    ) -> UploadPart:
        """Stream one piece to disk; raise (keeping nothing) when it is not what was announced."""
        folder = self.folder(upload_id)
        temp = folder / f".tmp-{secrets.token_hex(8)}"
        with _disk_errors():
            await asyncio.to_thread(folder.mkdir, parents=True, exist_ok=True)
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with _disk_errors():
                digest, received = await _stream_to(fd, chunks, size)
            if received != size:
                raise errors.PartSizeMismatch(expected=size, received=received)
            if md5 is not None and digest != md5:
                raise errors.BadDigest("the part does not match its md5")
            piece = UploadPart(upload_id, part, offset, size, digest, digest)
            with _disk_errors():
                await asyncio.to_thread(os.fsync, fd)
                await asyncio.to_thread(_publish, temp, self.path(piece))
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
        finally:
            os.close(fd)
        return piece

    async def read(self, pieces: list[UploadPart]) -> AsyncIterator[bytes]:
        """The pieces' bytes in order, a chunk at a time."""
        for piece in pieces:
            try:
                handle = await asyncio.to_thread(open, self.path(piece), "rb")
            except FileNotFoundError as exc:
                raise errors.InvalidParts(f"part {piece.part} is missing on disk") from exc
            try:
                while chunk := await asyncio.to_thread(handle.read, READ_CHUNK):
                    yield chunk
            finally:
                handle.close()

    async def remove(self, upload_id: str) -> None:
        await asyncio.to_thread(shutil.rmtree, self.folder(upload_id), True)

    async def upload_ids(self) -> set[str]:
        if not self.root.is_dir():
            return set()
        return {p.name for p in self.root.iterdir() if p.is_dir()}


async def _stream_to(fd: int, chunks: AsyncIterator[bytes], limit: int) -> tuple[str, int]:
    md5 = hashlib.md5(usedforsecurity=False)
    received = 0
    async for chunk in chunks:
        received += len(chunk)
        if received > limit:
            raise errors.PartSizeMismatch(expected=limit, received=f">{limit}")
        md5.update(chunk)
        view = memoryview(chunk)
        while view:
            view = view[os.write(fd, view) :]
    return md5.hexdigest(), received


@contextmanager
def _disk_errors() -> Iterator[None]:
    """A full or failing disk is the service's storage failing, not a bug."""
    try:
        yield
    except OSError as exc:
        full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
        cls = errors.StorageFull if full else errors.StorageError
        raise cls(f"upload parts: {os.strerror(exc.errno or 0) or 'I/O error'}") from exc


def _publish(temp: Path, target: Path) -> None:
    os.replace(temp, target)
    fd = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
