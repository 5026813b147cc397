"""``stowage backup DIR`` and ``stowage restore DIR`` for the embedded default: SQLite and
the files on local disk, taken while the server runs (docs/operations.md "Backups").

A backup is a data directory of its own: ``stowage.db`` (a snapshot made with SQLite's
online backup API, so writers are never stopped) and, for every stored row of that
snapshot whose object is on local disk under the data directory, the object at the same
relative path, copied and hashed. An object overwritten or deleted after the snapshot is
taken as it is found: its row in the backup is brought to the live row, or dropped, so
every row of a backup describes the bytes beside it. Pending rows (writes in progress at
the snapshot) are dropped. The directory is written as ``DIR.partial`` and renamed to
``DIR`` when complete: a ``DIR`` that exists is a whole backup.

``restore`` copies a backup into a fresh data directory, re-hashing every object against
its row; the registry is put in place last, so a restore cut short is run again.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stowage import errors
from stowage.assembly import providers_over
from stowage.config import Settings
from stowage.core.providers import Providers
from stowage.registry.base import FileRecord, Registry
from stowage.registry.sqlite import SQLiteRegistry
from stowage.storage.base import LocalFiles

MANIFEST = "backup.json"
REGISTRY = "stowage.db"
CHUNK = 1 << 20


@dataclass
class Tally:
    files: int = 0
    bytes: int = 0
    elsewhere: dict[str, int] = field(default_factory=dict)  # location -> rows not copied
    refreshed: int = 0  # rows brought to a version written after the snapshot
    dropped: int = 0  # rows of files deleted after the snapshot
    failures: list[dict[str, str]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "bytes": self.bytes,
            "elsewhere": self.elsewhere,
            "refreshed": self.refreshed,
            "dropped": self.dropped,
            "failed": len(self.failures),
            "failures": self.failures,
        }


def copy_hashed(source: Path, dest: Path) -> tuple[int, str]:
    """Copies a file (fsynced) and returns the size and SHA-256 of what was copied."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    size = 0
    with source.open("rb") as src, dest.open("wb") as out:
        while chunk := src.read(CHUNK):
            digest.update(chunk)
            out.write(chunk)
            size += len(chunk)
        out.flush()
        os.fsync(out.fileno())
    return size, digest.hexdigest()


def snapshot(registry_file: Path, dest: Path) -> None:
    """SQLite's online backup: a consistent copy while writers go on."""
    source = sqlite3.connect(registry_file, timeout=30)
    target = sqlite3.connect(dest)
    try:
        source.backup(target)
        target.execute("DELETE FROM files WHERE state = 'pending'")
        target.commit()
    finally:
        target.close()
        source.close()


def settle_file(path: Path) -> None:
    """One self-contained file: the WAL folded in, the lock folder a registry made gone."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA journal_mode = DELETE")
    finally:
        conn.close()
    shutil.rmtree(path.parent / "locks", ignore_errors=True)


def _where(providers: Providers, data_dir: Path, app: Any, record: FileRecord) -> Path | str:
    """The object's path relative to the data directory, or the location of a store the
    backup does not copy."""
    provider = providers.provider_for(app, record.provider)
    if not isinstance(provider, LocalFiles):
        return provider.location
    path = provider.local_path(record.container, record.key)
    try:
        return path.resolve().relative_to(data_dir.resolve())
    except ValueError:
        return f"local outside {data_dir}"


class Backup:
    def __init__(self, settings: Settings, dest: Path, on_file: Callable[[str], None]) -> None:
        self.settings = settings
        self.dest = dest
        self.partial = dest.with_name(dest.name + ".partial")
        self.on_file = on_file
        self.tally = Tally()

    async def run(self) -> dict[str, Any]:
        if self.settings.registry_shared:
            raise errors.InvalidParameter(
                "the registry is PostgreSQL: back it up with pg_dump (docs/operations.md)"
            )
        if self.dest.exists():
            raise errors.Conflict(f"{self.dest} exists; a backup goes to a new directory")
        shutil.rmtree(self.partial, ignore_errors=True)  # what a killed backup left
        self.partial.mkdir(parents=True)
        started = time.time()
        await asyncio.to_thread(snapshot, self.settings.registry_path, self.partial / REGISTRY)
        live = SQLiteRegistry(self.settings.registry_path)
        snap = SQLiteRegistry(self.partial / REGISTRY)
        await live.open()
        await snap.open()
        try:
            providers = providers_over(self.settings, snap)
            try:
                # Keyset pages (handle > last): a row changed behind the cursor is safe.
                async for record in snap.all_files():
                    await self._one(providers, live, snap, record)
            finally:
                await providers.close()
        finally:
            await snap.close()
            await live.close()
        settle_file(self.partial / REGISTRY)
        summary = {"created": started, "seconds": round(time.time() - started, 3)}
        summary.update(self.tally.as_json())
        (self.partial / MANIFEST).write_text(json.dumps(summary, indent=2) + "\n")
        if not self.tally.failures:
            self.partial.rename(self.dest)
        return summary

    async def _one(
        self, providers: Providers, live: Registry, snap: Registry, record: FileRecord
    ) -> None:
        app = await snap.get_app(record.api_key)
        if record.cloud or app is None:
            return
        where = _where(providers, self.settings.data_dir, app, record)
        if isinstance(where, str):
            self.tally.elsewhere[where] = self.tally.elsewhere.get(where, 0) + 1
            return
        source = self.settings.data_dir / where
        try:
            size, sha256 = await asyncio.to_thread(copy_hashed, source, self.partial / where)
        except FileNotFoundError:
            size, sha256 = -1, ""
        moved_on = (size, sha256) != (record.size, record.sha256)
        if moved_on and not await self._follow(live, snap, record, size, sha256):
            return
        self.tally.files += 1
        self.tally.bytes += max(size, 0)
        self.on_file(record.handle)

    async def _follow(
        self, live: Registry, snap: Registry, record: FileRecord, size: int, sha256: str
    ) -> bool:
        """The object is not the snapshot's: the live row says whether it moved on."""
        now = await live.get(record.handle)
        if now is None and size < 0:  # deleted after the snapshot
            await snap.delete(record.handle)
            self.tally.dropped += 1
            return False
        if now is not None and (now.size, now.sha256) == (size, sha256):
            await snap.update(now)
            self.tally.refreshed += 1
            return True
        reason = "object missing" if size < 0 else "object does not match its row"
        self.tally.failures.append({"handle": record.handle, "reason": reason})
        return False


async def restore(
    settings: Settings, backup: Path, on_file: Callable[[str], None]
) -> dict[str, Any]:
    if settings.registry_shared:
        raise errors.InvalidParameter("restore goes to the embedded registry (SQLite)")
    if not (backup / MANIFEST).exists() or not (backup / REGISTRY).exists():
        raise errors.InvalidParameter(f"{backup} is not a complete backup (no {MANIFEST})")
    if settings.registry_path.exists():
        raise errors.Conflict(f"{settings.data_dir} has a registry; restore into a fresh one")
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    restoring = settings.data_dir / (REGISTRY + ".restoring")
    shutil.copyfile(backup / REGISTRY, restoring)
    tally = Tally()
    registry = SQLiteRegistry(restoring)
    await registry.open()
    try:
        providers = providers_over(settings, registry)
        try:
            async for record in registry.all_files():
                await _restore_one(settings, backup, providers, registry, record, tally)
                on_file(record.handle)
        finally:
            await providers.close()
    finally:
        await registry.close()
    settle_file(restoring)
    if not tally.failures:
        restoring.rename(settings.registry_path)
    return tally.as_json()


async def _restore_one(
    settings: Settings,
    backup: Path,
    providers: Providers,
    registry: Registry,
    record: FileRecord,
    tally: Tally,
) -> None:
    app = await registry.get_app(record.api_key)
    if record.cloud or app is None:
        return
    where = _where(providers, settings.data_dir, app, record)
    if isinstance(where, str):
        tally.elsewhere[where] = tally.elsewhere.get(where, 0) + 1
        return
    try:
        copied = await asyncio.to_thread(copy_hashed, backup / where, settings.data_dir / where)
    except FileNotFoundError:
        tally.failures.append({"handle": record.handle, "reason": "not in the backup"})
        return
    if copied != (record.size, record.sha256):
        tally.failures.append({"handle": record.handle, "reason": "does not match its row"})
        return
    tally.files += 1
    tally.bytes += record.size
