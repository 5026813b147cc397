"""Sources as paths a job can open: a stored file read in place or saved to the spool,
with the input byte limit."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

from stowage import errors
from stowage.processing import metrics
from stowage.processing.spool import Spool
from stowage.registry.base import FileRecord
from stowage.storage.base import LocalFiles, Provider


@contextlib.asynccontextmanager
async def readable(
    provider: Provider, record: FileRecord, spool: Spool, max_bytes: int
) -> AsyncIterator[Path]:
    """A path libvips can open. A local file is opened once and read through its
    descriptor, so an overwrite renaming a new file into place mid-job is not seen;
    the job process opens it as this process's descriptor."""
    if isinstance(provider, LocalFiles):
        try:
            fd = os.open(provider.local_path(record.container, record.key), os.O_RDONLY)
        except FileNotFoundError as exc:
            raise errors.StorageNotFound() from exc
        try:
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
