"""Sources as paths a job can open: a stored file read in place or saved to the spool,
with the input byte limit."""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from stowage import errors
from stowage.core import reading
from stowage.core.reading import VersionRows
from stowage.processing import metrics
from stowage.processing.spool import Spool
from stowage.registry.base import FileRecord
from stowage.storage.base import LocalFiles, Provider


@contextlib.asynccontextmanager
async def readable(
    provider: Provider,
    record: FileRecord,
    spool: Spool,
    max_bytes: int,
    rows: VersionRows | None = None,
) -> AsyncIterator[Path]:
    """A path libvips can open. A local file is opened once and read through its
    descriptor, so an overwrite renaming a new file into place mid-job is not seen;
    the job process opens it as this process's descriptor. With ``rows``, the file
    opened must be ``record``'s version (``StorageVersionChanged`` otherwise)."""
    if isinstance(provider, LocalFiles):
        try:
            fd = os.open(provider.local_path(record.container, record.key), os.O_RDONLY)
        except FileNotFoundError as exc:
            raise errors.StorageNotFound() from exc
        try:
            if rows is not None:
                await _of_version(rows, record, fd)
            yield Path(f"/proc/{os.getpid()}/fd/{fd}")
        finally:
            os.close(fd)
        return
    with spool.held(".src") as path:
        chunks = provider.open(record.container, record.key)
        pinned = rows is not None and bool(record.sha256) and not record.cloud
        digest = hashlib.sha256() if pinned else None
        await save(chunks, path, max_bytes, digest)
        if rows is not None and digest is not None and digest.hexdigest() != record.sha256:
            await _changed_or_damaged(rows, record)
        yield path


async def save(
    chunks: AsyncIterator[bytes], path: Path, max_bytes: int, digest: Any = None
) -> None:
    """``chunks`` into ``path``, refusing more than ``max_bytes``; ``digest`` (a hashlib
    object) is given every chunk."""
    written = 0
    try:
        with path.open("wb") as handle:
            async for chunk in chunks:
                written += len(chunk)
                if written > max_bytes:
                    metrics.REFUSALS.inc(code=errors.PayloadTooLarge.code)
                    raise errors.PayloadTooLarge(max_bytes=max_bytes)
                handle.write(chunk)
                if digest is not None:
                    digest.update(chunk)
    finally:
        close = getattr(chunks, "aclose", None)
        if close is not None:
            await close()


async def _changed_or_damaged(rows: VersionRows, record: FileRecord) -> None:
    """A store's object read whole is not the bytes of ``record``'s version: a newer one
    (an overwrite since the row was read, or one between its object's commit and its row:
    ``StorageVersionChanged``, read again from the new row) or, with the row and no
    overwrite under way, damaged bytes (``IntegrityError``, as a verified download)."""
    fresh = await reading.row_of(rows, record)
    if fresh.version == record.version and await rows.pending_overwrite(record.handle) is None:
        raise errors.IntegrityError(handle=record.handle)
    raise errors.StorageVersionChanged()


async def _of_version(rows: VersionRows, record: FileRecord, fd: int) -> None:
    """The file open at ``fd`` is ``record``'s version, or ``StorageVersionChanged``. A
    derivative is kept under the version of the row read before its source was opened:
    an overwrite between the two rendered the new bytes under the old version's key and
    ETag (with ``cache=false``, one tag was answered with both versions' pictures). As
    for a download (``http/pinned.py``), a file modified seconds ago or more is the row's
    without asking the registry: the cold path reads no row again."""
    found = os.fstat(fd)
    if found.st_nlink == 0:  # replaced since it was opened: its times no longer tell
        raise errors.StorageVersionChanged()
    modified = max(found.st_mtime, found.st_ctime)  # a rename sets ctime (http/pinned.py)
    clock = reading.LOCAL_CLOCK
    named, _ = await reading.named_by(rows, record, found.st_size, modified, clock)
    if named is None or named.version != record.version:  # newer, or mid-commit
        raise errors.StorageVersionChanged()
