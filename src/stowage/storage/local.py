"""Local disk provider: objects are files under ``<root>/objects/<container>/<key>``.

Writes go to ``<root>/tmp`` (same filesystem), are fsynced, renamed over the
target and the directory is fsynced, so a reader sees the old file or the new
one whole, and a crash leaves at most a temporary file, swept on start.
To be shared by several nodes the root must be on a shared filesystem.
"""

from __future__ import annotations

import asyncio
import errno
import os
import secrets
import stat
from collections.abc import AsyncIterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from stowage import errors
from stowage.storage.base import Chunks, ObjectInfo, WriteOptions
from stowage.storage.blockwriter import BlockWriter
from stowage.storage.settings import LocalSettings, parse

READ_CHUNK = 256 * 1024


class LocalProvider:
    location = "local"
    supports_containers = True

    def __init__(self, root: Path, default_container: str = "default") -> None:
        self.root = root
        self.default_container = default_container
        self.objects = root / "objects"
        self.tmp = root / "tmp"
        self.objects.mkdir(parents=True, exist_ok=True)
        self.tmp.mkdir(parents=True, exist_ok=True)
        self._objects_dir = os.path.abspath(self.objects)

    def local_path(self, container: str, key: str) -> Path:
        # Lexical check (no realpath: it lstats every component, a tenth of a small
        # download's CPU). Names are normalised (no ``..``) before they get here, and only
        # Stowage writes under the root, so no symlink there can lead outside it.
        path = os.path.normpath(os.path.join(self._objects_dir, container, key))
        if not path.startswith(self._objects_dir + os.sep):
            raise errors.InvalidPath("storage path escapes the storage root")
        return Path(path)

    def stored_files(self) -> list[Path]:
        return [path for path in sorted(self.objects.rglob("*")) if path.is_file()]

    def temporary_files(self) -> list[Path]:
        return sorted(self.tmp.iterdir())

    async def write(
        self, container: str, key: str, chunks: Chunks, options: WriteOptions
    ) -> ObjectInfo:
        target = self.local_path(container, key)
        temp = self.tmp / f"{secrets.token_hex(12)}.part"
        loop = asyncio.get_running_loop()
        with _os_errors():
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            await BlockWriter(fd, _os_errors).write_all(chunks)
            with _os_errors():
                await loop.run_in_executor(None, os.fsync, fd)
                await loop.run_in_executor(None, _publish, temp, target)
        except BaseException:
            _discard(temp)
            raise
        finally:
            os.close(fd)
        return _info(target.stat())

    async def adopt(
        self, container: str, key: str, path: Path, synced: bool = False
    ) -> ObjectInfo | None:
        """``path`` (a finished file that nothing else writes) put at ``key`` by a rename,
        as durably as ``write``: its data synced, then the folder's entry. None, and
        ``path`` left as it was, when it is on another file system (the caller copies).
        ``synced`` (``Adopts``): the data are, and the rename is made here, a few metadata
        calls, with no folder sync: a cache's entry lost in a crash is made again, and
        one that survives has its data."""
        target = self.local_path(container, key)
        loop = asyncio.get_running_loop()
        try:
            if synced:
                found = path.stat()
                _publish(path, target, sync_folder=False)
            else:
                found = await loop.run_in_executor(None, _adopt, path, target)
        except OSError as exc:
            if exc.errno == errno.EXDEV:
                return None
            raise _storage_error(exc) from exc
        return _info(found)

    async def open(
        self,
        container: str,
        key: str,
        start: int = 0,
        end: int | None = None,
        version: str | None = None,
    ) -> Chunks:
        path = self.local_path(container, key)
        loop = asyncio.get_running_loop()
        with _os_errors():
            handle = await loop.run_in_executor(None, _open_at, path, start)
        try:
            # The open descriptor holds one inode whatever renames follow: checking it
            # pins the whole read.
            if version is not None and _info(os.fstat(handle.fileno())).etag != version:
                raise errors.StorageVersionChanged("local storage: the file was replaced")
            remaining = None if end is None else end - start + 1
            while remaining is None or remaining > 0:
                size = READ_CHUNK if remaining is None else min(READ_CHUNK, remaining)
                with _os_errors():
                    chunk = await loop.run_in_executor(None, handle.read, size)
                if not chunk:
                    break
                if remaining is not None:
                    remaining -= len(chunk)
                yield chunk
        finally:
            handle.close()

    async def stat(self, container: str, key: str) -> ObjectInfo:
        path = self.local_path(container, key)
        with _os_errors():
            st = path.stat()
        if stat.S_ISDIR(st.st_mode):  # a folder is no object: nothing to link or serve
            raise errors.StorageNotFound("local storage: this key is a folder, not a file")
        return _info(st)

    async def delete(self, container: str, key: str) -> None:
        path = self.local_path(container, key)
        with _os_errors():
            path.unlink()
            _fsync_dir(path.parent)

    async def keys(self, container: str, prefix: str) -> AsyncIterator[str]:
        root = self.local_path(container, "x").parent
        folder = prefix.rpartition("/")[0]  # walk only below the prefix's folder
        names = await asyncio.to_thread(_walk, root, folder)
        for name in sorted(names):
            if name.startswith(prefix):
                yield name

    async def sweep_temporary(self) -> int:
        removed = 0
        for entry in self.tmp.iterdir():
            entry.unlink(missing_ok=True)
            removed += 1
        return removed

    async def close(self) -> None:
        return None


def from_config(config: Mapping[str, Any], data_dir: Path) -> LocalProvider:
    """The provider of a configuration table (``build`` takes settings already parsed)."""
    return build(parse(LocalSettings, config), data_dir)


def build(settings: LocalSettings, data_dir: Path) -> LocalProvider:
    return LocalProvider(Path(settings.root or data_dir), settings.container)


def _walk(root: Path, folder: str) -> list[str]:
    start = root / folder if folder else root
    if not start.is_dir() or not start.resolve().is_relative_to(root.resolve()):
        return []
    return [p.relative_to(root).as_posix() for p in start.rglob("*") if p.is_file()]


def _publish(temp: Path, target: Path, sync_folder: bool = True) -> None:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as exc:  # a/file exists; a/file/sub asked
        raise errors.KeyInUse("a file already exists where this path needs a folder") from exc
    if target.is_dir():
        raise errors.KeyInUse("a folder already exists at this key")
    os.replace(temp, target)
    if sync_folder:
        _fsync_dir(target.parent)


def _adopt(path: Path, target: Path) -> os.stat_result:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fchmod(fd, 0o644)  # as ``write`` makes them (the spool's are the owner's only)
        os.fsync(fd)
        found = os.fstat(fd)
    finally:
        os.close(fd)
    _publish(path, target)
    return found


def _open_at(path: Path, start: int) -> Any:
    handle = open(path, "rb")  # noqa: SIM115 - closed by the generator that owns it
    handle.seek(start)
    return handle


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _discard(temp: Path) -> None:
    temp.unlink(missing_ok=True)


def _info(st: os.stat_result) -> ObjectInfo:
    return ObjectInfo(st.st_size, f"{st.st_mtime_ns:x}-{st.st_size:x}", st.st_mtime)


_ERRNO_MAP: dict[int, type[errors.StorageError]] = {
    errno.ENOENT: errors.StorageNotFound,
    errno.ENOTDIR: errors.StorageNotFound,
    errno.EISDIR: errors.StorageNotFound,
    errno.ENOSPC: errors.StorageFull,
    errno.EDQUOT: errors.StorageFull,
    errno.EACCES: errors.StorageAccessDenied,
    errno.EPERM: errors.StorageAccessDenied,
    errno.EROFS: errors.StorageUnavailable,
}


@contextmanager
def _os_errors() -> Any:
    try:
        yield
    except OSError as exc:
        raise _storage_error(exc) from exc


def _storage_error(exc: OSError) -> errors.StorageError:
    cls = _ERRNO_MAP.get(exc.errno or 0, errors.StorageError)
    return cls(f"local storage: {os.strerror(exc.errno or 0) or 'I/O error'}")
