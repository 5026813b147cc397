"""Sources as paths a job can open: a stored file read in place or saved to the spool,
with the input byte limit."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

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
        await save(chunks, path, max_bytes)
        yield path


async def save(chunks: AsyncIterator[bytes], path: Path, max_bytes: int) -> None:
    """``chunks`` into ``path``, refusing more than ``max_bytes``."""
    written = 0
    try:
        with path.open("wb") as handle:
            async for chunk in chunks:
                written += len(chunk)
                if written > max_bytes:
                    metrics.REFUSALS.inc(code=errors.PayloadTooLarge.code)
                    raise errors.PayloadTooLarge(max_bytes=max_bytes)
                handle.write(chunk)
    finally:
        close = getattr(chunks, "aclose", None)
        if close is not None:
            await close()


async def _of_version(rows: VersionRows, record: FileRecord, fd: int) -> None:
    """The file open at ``fd`` is ``record``'s version, or ``StorageVersionChanged``. A
    derivative is kept under the version of the row read before its source was opened:
    an overwrite between the two rendered the new bytes under the old version's key and
    ETag (with ``cache=false``, one tag was answered with both versions' pictures)."""
    found = os.fstat(fd)
    if found.st_nlink == 0:  # replaced since it was opened: its times no longer tell
        raise errors.StorageVersionChanged()
    fresh = await reading.row_of(rows, record)
    if fresh.version != record.version:  # the file opened may be the newer one
        raise errors.StorageVersionChanged()
    modified = max(found.st_mtime, found.st_ctime)  # a rename sets ctime (http/pinned.py)
    clock = reading.LOCAL_CLOCK
    named, _ = await reading.named_by(rows, record, found.st_size, modified, clock)
    if named is None or named.version != record.version:  # an overwrite mid-commit
        raise errors.StorageVersionChanged()
