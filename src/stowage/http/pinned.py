"""A local file opened before its answer's headers are built, and served from that open
file: the headers (ETag, length, type) and the bytes are one version's.

aiohttp's sendfile response opens the file by its path when the headers leave. An
overwrite, or the removal of an old version's derivative, between the row read and that
open gave a body of one version under the other's ETag, or a 404 for a file that exists.
The file is opened here instead (and the row naming it found, ``reading.named_by``),
and aiohttp opens ``/proc/self/fd/<n>``: the same inode, whatever renames follow.
"""

from __future__ import annotations

import dataclasses
import os
import stat

from stowage import errors
from stowage.core import reading
from stowage.core.reading import Download, VersionRows
from stowage.storage.base import ObjectInfo


async def pinned(plan: Download, registry: VersionRows | None) -> tuple[Download, int]:
    """The plan's local file opened (its descriptor, which the caller closes), with the
    row and object info of the version opened. ``registry`` None: a derivative, which
    has no row; one removed since it was found (its file was overwritten) is 503
    ``STORAGE_VERSION_CHANGED``, for the caller to ask for the new one."""
    assert plan.local_path is not None
    record = plan.record
    for attempt in range(reading.MAX_ATTEMPTS):
        opened = _opened(str(plan.local_path), registry is None)
        if opened is None:  # an original's object is missing (a derivative's raised)
            assert registry is not None
            await reading.row_of(registry, record)  # a delete raced it: the handle's 404
            raise errors.StorageNotFound("the file's object is missing")
        fd, st = opened
        if st.st_nlink == 0 and registry is not None:
            # Replaced (or removed) since it was opened: the rename set its ctime, so its
            # own times no longer say when it took the path. The path has the newer one.
            os.close(fd)
            await reading.back_off(attempt)
            continue
        info = ObjectInfo(st.st_size, f"{st.st_mtime_ns:x}-{st.st_size:x}", st.st_mtime)
        if registry is None:
            return dataclasses.replace(plan, info=info), fd
        # A rename sets ctime: the time the version took this path (nothing here links
        # or changes an object's inode otherwise; one renamed over is caught above).
        modified = max(st.st_mtime, st.st_ctime)
        clock = reading.LOCAL_CLOCK
        if clock.settled_at(modified):  # the common case, with no coroutine to await
            return dataclasses.replace(plan, record=record, info=info), fd
        named, fresh = await reading.named_by(registry, record, st.st_size, modified, clock)
        if named is not None:
            return dataclasses.replace(plan, record=named, info=info), fd
        os.close(fd)
        if fresh.version == record.version:  # an overwrite mid-commit: let it land
            await reading.back_off(attempt)
        record = fresh  # a newer row: its object is there already
    raise errors.StorageVersionChanged()


def _opened(path: str, derivative: bool) -> tuple[int, os.stat_result] | None:
    """The file's descriptor and its ``fstat``; None when an original's is missing."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        if derivative:
            raise errors.StorageVersionChanged() from None
        return None
    except PermissionError:
        raise errors.StorageAccessDenied() from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise errors.StorageNotFound("local storage: this key is a folder, not a file")
    return fd, st
