"""Integrity: stored bytes against the SHA-256 recorded at write time, and ``fsck``.

``verify`` re-reads an object and compares its hash with ``FileRecord.sha256``;
``fsck`` finds handles whose objects are missing, overwrites a crash left unsettled
(``core/overwrites.py``) and, on local disk, objects and temporary files that no handle
owns. Reports only, unless asked to repair.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

from stowage import errors
from stowage.core import examine, overwrites, reading
from stowage.core.providers import Providers
from stowage.registry.base import FileRecord, FileRows, OverwriteRows, Registry
from stowage.storage.base import Inventories

OK, CORRUPT, MISSING, UNRECORDED, UNREADABLE = "ok", "corrupt", "missing", "unrecorded", "error"
TEMP_MIN_AGE = 3600.0  # a younger temporary file may belong to an upload in progress


@dataclass
class Verdict:
    handle: str
    status: str
    detail: str = ""


@dataclass
class FsckReport:
    missing: list[str] = field(default_factory=list)  # handles without their object
    unsettled: list[str] = field(default_factory=list)  # handles with an overwrite intent
    orphans: list[Path] = field(default_factory=list)  # local objects no handle owns
    temporary: list[Path] = field(default_factory=list)  # leftover temporary files
    repaired: int = 0

    @property
    def clean(self) -> bool:
        return not (self.missing or self.unsettled or self.orphans or self.temporary)


async def verify_record(
    files: FileRows, providers: Providers, record: FileRecord, retries: int = 2
) -> Verdict:
    """Re-hash one stored object; never raises for a bad object, only reports it."""
    if record.cloud or not record.sha256:
        return Verdict(record.handle, UNRECORDED, "no hash was recorded at write time")
    try:
        provider = providers.provider_for(await providers.app(record.api_key), record.provider)
        chunks = reading.whole(provider, record.container, record.key)
        found = await examine.hash_stream(chunks, ["sha256"])
    except errors.StorageNotFound:
        return Verdict(record.handle, MISSING, "the object is missing in storage")
    except errors.StowageError as exc:
        return Verdict(record.handle, UNREADABLE, f"{exc.code}: {exc.message}")
    if found["sha256"] != record.sha256:
        # An overwrite that committed while this read: judged against its row, not ours.
        fresh = await files.get(record.handle) if retries else None
        if fresh is not None and fresh.version != record.version:
            return await verify_record(files, providers, fresh, retries - 1)
        return Verdict(record.handle, CORRUPT, f"sha256 {found['sha256']} != {record.sha256}")
    return Verdict(record.handle, OK)


async def check(files: FileRows, providers: Providers, record: FileRecord) -> None:
    """Raises ``IntegrityError`` unless the object's bytes hash to the recorded SHA-256."""
    verdict = await verify_record(files, providers, record)
    if verdict.status == CORRUPT:
        raise errors.IntegrityError(handle=record.handle)
    if verdict.status == MISSING:
        raise errors.StorageNotFound(handle=record.handle)
    if verdict.status == UNREADABLE:
        raise errors.StorageError(verdict.detail, handle=record.handle)


async def verify(
    registry: FileRows, providers: Providers, handles: list[str]
) -> AsyncIterator[Verdict]:
    """Every stored file, or the ones named."""
    if not handles:
        async for record in registry.all_files():
            yield await verify_record(registry, providers, record)
        return
    for handle in handles:
        found = await registry.get(handle)
        if found is None:
            yield Verdict(handle, MISSING, "no such handle")
        else:
            yield await verify_record(registry, providers, found)


async def fsck(registry: OverwriteRows, providers: Providers, repair: bool = False) -> FsckReport:
    report = FsckReport()
    await _unsettled(registry, providers, report, repair)  # first: settling changes rows below
    owned: set[Path] = set()
    async for record in registry.all_files():
        provider = providers.provider_for(await providers.app(record.api_key), record.provider)
        if isinstance(provider, Inventories):
            owned.add(provider.local_path(record.container, record.key))
        if record.cloud:
            continue
        try:
            await provider.stat(record.container, record.key)
        except errors.StorageNotFound:
            report.missing.append(record.handle)
            if repair and await registry.delete(record.handle):
                report.repaired += 1
    for local in await _local_providers(providers):
        _scan(local, owned, report, repair)
    return report


async def _unsettled(
    registry: OverwriteRows, providers: Providers, report: FsckReport, repair: bool
) -> None:
    now = time.time()
    report.unsettled = [i.handle for i in await registry.overwrite_intents(now)]
    if repair and report.unsettled:
        report.repaired += await overwrites.settle_all(registry, providers, now)


async def _local_providers(providers: Providers) -> list[Inventories]:
    found = [*providers.local_defaults(), *await providers.configured()]
    unique = {p.root.resolve(): p for p in found if isinstance(p, Inventories)}
    return list(unique.values())


def _scan(provider: Inventories, owned: set[Path], report: FsckReport, repair: bool) -> None:
    for path in provider.stored_files():
        if path.resolve() not in owned:
            report.orphans.append(path)
            report.repaired += _remove(path) if repair else 0
    cutoff = time.time() - TEMP_MIN_AGE
    for path in provider.temporary_files():
        report.temporary.append(path)
        if repair and path.stat().st_mtime < cutoff:
            report.repaired += _remove(path)


def _remove(path: Path) -> int:
    path.unlink(missing_ok=True)
    return 1


async def run_verify(
    registry: Registry, providers: Providers, handles: list[str], echo: Callable[[str], None]
) -> int:
    """``stowage verify``: one line per file; returns how many are not ``ok``. The command
    passes the parts of an assembly it opened without start-up recovery."""
    bad = 0
    async for verdict in verify(registry, providers, handles):
        bad += verdict.status not in (OK, UNRECORDED)
        echo(f"{verdict.handle}  {verdict.status}  {verdict.detail}".rstrip())
    return bad


async def run_fsck(
    registry: Registry, providers: Providers, repair: bool, echo: Callable[[str], None]
) -> bool:
    """``stowage fsck``: what is inconsistent (and, with ``repair``, removed); True if clean.
    No start-up recovery may run before it: recovery would hide what it reports."""
    report = await fsck(registry, providers, repair)
    for handle in report.missing:
        echo(f"missing object  {handle}")
    for handle in report.unsettled:
        echo(f"unsettled write {handle}")
    for path in report.orphans:
        echo(f"orphan object   {path}")
    for path in report.temporary:
        echo(f"temporary file  {path}")
    if repair:
        echo(f"repaired {report.repaired}")
    echo("clean" if report.clean else "inconsistent")
    return report.clean
