"""Reads that see one version of a file whole (issue 18).

An overwrite replaces the object at the same key, so a reader that asks for the size in
one request and the bytes in another can get one version's length and another's bytes.
A whole read asks once where the provider allows it (``storage.base.open_whole``: the
GET's own headers describe the version its body is; issue 17, the store's per-request
cost is what limits small reads); other reads (ranges, HEAD, conditional) pin their bytes
to the version a ``stat`` described (``open(version=)``, each provider's own mechanism,
see ``storage/base.py``). Either way the object, first chunk included, is opened before
the caller commits to anything: a download's headers (length, Content-Range, ETag, type)
are built from what was actually opened. When a pin fails (an overwrite committed in
between) the row is read again and the read starts over, at most ``MAX_ATTEMPTS`` times;
then ``StorageVersionChanged`` (503, retryable).

Which version: the object is committed before its row (``core/overwrites.py``), so the
one found after the row was read is the row's version or a newer one, whole. The headers
(the ETag above all) must name the row of the bytes sent, so an object is checked once it
is opened (``named_by``): a store's when its size is not the row's, a file on this node's
disk (``http/pinned.py``) when it was modified in the last few seconds. The row unchanged
and no overwrite between its object's commit and its row (its intent, recorded before the
commit and dropped with the row's update) means it is the row's version; with one, the
sizes (or, on this node's disk, the time the file took its path) tell the row's version
from the intent's; otherwise the row is read again and the object opened again (503
``STORAGE_VERSION_CHANGED`` after ``MAX_ATTEMPTS``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar, cast

from stowage import errors
from stowage.registry.base import App, FileRecord, FileRows, OverwriteIntent
from stowage.storage.base import (
    Chunks,
    LocalFiles,
    ObjectInfo,
    Provider,
    open_span,
    open_whole,
    pin_of,
)

MAX_ATTEMPTS = 8
BACKOFF = 0.005  # seconds, doubled per attempt up to 0.08: at most about 0.4 s in all
#: The byte range to read, given the size of the version found (None: the whole object).
Span = Callable[[int], tuple[int, int] | None]


class VersionRows(FileRows, Protocol):
    """The rows a download reads: the file's, and whether an overwrite is under way."""

    async def pending_overwrite(self, handle: str) -> OverwriteIntent | None: ...


@dataclass
class Download:
    """What a download serves: the row, the object's facts, its provider and, for a file
    on this node's disk, its path."""

    record: FileRecord
    info: ObjectInfo
    provider: Provider
    local_path: Path | None
    app: App


D = TypeVar("D", bound=Download)
T = TypeVar("T")


@dataclass(frozen=True)
class Unopened(ObjectInfo):
    """What a file's row says of its object before any request to the store: the plan of a
    download carries it until ``open_download`` opens the object and learns the truth (its
    etag is empty; only the size, the row's, may be used before)."""


async def described(provider: Provider, record: FileRecord) -> ObjectInfo:
    """The object's info for a download plan: a ``stat`` for local files (cheap, and the
    server sendfiles them), the row's ``Unopened`` info for stores, whose read says it."""
    if isinstance(provider, LocalFiles):
        return await provider.stat(record.container, record.key)
    return Unopened(record.size, "", record.uploaded / 1000)


async def stated(plan: D) -> D:
    """The plan with the object's real info (a ``stat``) where it has only the row's."""
    if not isinstance(plan.info, Unopened):
        return plan
    info = await plan.provider.stat(plan.record.container, plan.record.key)
    return dataclasses.replace(plan, info=info)


@dataclass
class Opened:
    """One version, opened: ``info`` describes it, ``chunks`` are its bytes (the range)."""

    info: ObjectInfo
    span: tuple[int, int] | None
    chunks: Chunks


async def open_version(
    provider: Provider,
    container: str,
    key: str,
    info: ObjectInfo,
    span: Span | None = None,
    body: bool = True,
) -> Opened:
    """Opens exactly the version ``info`` describes and reads its first chunk, or raises
    ``StorageVersionChanged`` (another version is there now) or ``StorageNotFound``."""
    bounds = span(info.size) if span is not None else None
    if not body or info.size == 0 or (bounds is not None and bounds[1] < bounds[0]):
        return Opened(info, bounds, _nothing())
    start, end = bounds if bounds is not None else (0, None)
    chunks = provider.open(container, key, start, end, version=pin_of(info))
    try:
        first = await anext(chunks, None)
    except BaseException:
        await close(chunks)
        raise
    return Opened(info, bounds, _prepended(first, chunks))


async def open_current(
    provider: Provider,
    container: str,
    key: str,
    span: Span | None = None,
    body: bool = True,
    size: int | None = None,
) -> Opened:
    """The current version of an object, opened (whole, or the ``span`` of it): for
    internal readers (hashes, copies, verification), which have no row version to keep to.
    ``size``, the size a caller believes it has, lets a range be read in one request."""
    return await again_on_change(lambda _: _open(provider, container, key, None, span, body, size))


async def again_on_change(read: Callable[[int], Awaitable[T]]) -> T:
    """``read(attempt)``, begun again while an overwrite wins (``StorageVersionChanged``),
    at most ``MAX_ATTEMPTS`` times, after a jittered pause."""
    for attempt in range(MAX_ATTEMPTS):
        try:
            return await read(attempt)
        except errors.StorageVersionChanged:
            if attempt + 1 == MAX_ATTEMPTS:
                raise
            await back_off(attempt)
    raise errors.StorageVersionChanged()


async def whole(provider: Provider, container: str, key: str, span: Span | None = None) -> Chunks:
    """``open_current`` as a plain stream of chunks, opened when first read."""
    opened = await open_current(provider, container, key, span)
    async for chunk in opened.chunks:
        yield chunk


async def open_download(
    registry: VersionRows, plan: D, span: Span | None, body: bool
) -> tuple[D, Opened]:
    """Opens the bytes a download will send (``span`` None: the whole file), and returns the
    plan with the row and object info that describe them (both may be newer than the plan's)."""
    record = plan.record
    info = None if isinstance(plan.info, Unopened) else plan.info
    for attempt in range(MAX_ATTEMPTS):
        try:
            opened = await _open(
                plan.provider, record.container, record.key, info, span, body, record.size
            )
        except errors.StorageVersionChanged:
            await back_off(attempt)
            record, info = await row_of(registry, record), None
            continue
        except errors.StorageNotFound:
            await row_of(registry, record)  # a delete raced this read: the handle's 404
            raise
        found = opened.info
        named: FileRecord | None
        if found.size == record.size:
            # The row's size: taken as its version. A store's clock is not this node's,
            # so an object of the same size mid-commit cannot be told from it (a file on
            # this node's disk can: http/pinned.py).
            named, fresh = record, record
        else:
            named, fresh = await named_by(registry, record, found.size, found.modified, STORE_CLOCK)
        if named is not None and found.size != named.size and attempt + 1 < MAX_ATTEMPTS:
            # Not the row's version: a row newer than the object opened, or an old object
            # past the check above. A newer row is taken (read here unless named_by did).
            fresh = await row_of(registry, record) if fresh is record else fresh
            named = None if fresh.version != record.version else named
        if named is not None:
            return dataclasses.replace(plan, record=named, info=opened.info), opened
        await close(opened.chunks)
        if fresh.version == record.version:  # an overwrite mid-commit: let it land
            await back_off(attempt)
        record, info = fresh, None  # a newer row: its object is there already
    raise errors.StorageVersionChanged()


@dataclass(frozen=True)
class Clock:
    """How far an object's modification time can be trusted against this node's clock:
    an object older than ``settled`` seconds is past any overwrite's window between its
    commit and its row (milliseconds; seconds for one stalled on its registry); within
    ``slack`` of an intent's time its commit cannot be ordered against it (None: never,
    a store's clock is not this node's)."""

    settled: float
    slack: float | None

    def settled_at(self, modified: float) -> bool:
        """An object modified then is past any overwrite's window: its row names it."""
        return modified < time.time() - self.settled


def _tick() -> float:
    """How far a file's times may lag the clock: the kernel stamps them from its coarse
    clock (``CLOCK_REALTIME_COARSE``, 5 on Linux), one tick (1-10 ms) behind at most."""
    try:
        return max(0.001, time.clock_getres(5))
    except OSError:
        return 0.01


LOCAL_CLOCK = Clock(settled=5.0, slack=2 * _tick())
STORE_CLOCK = Clock(settled=60.0, slack=None)


async def named_by(
    registry: VersionRows, record: FileRecord, size: int, modified: float, clock: Clock
) -> tuple[FileRecord | None, FileRecord]:
    """The row naming an object opened after ``record`` was read (its ``size`` and the
    time it was ``modified``), or None when that cannot be told yet; and the row as it
    is now, to read again with. While an overwrite is between its object's commit and
    its row, the object is the row's version or the intent's: their sizes tell which,
    or, on this node's clock, whether it took its path before the intent was recorded."""
    if clock.settled_at(modified):
        return record, record
    # The intent first: one the row's update dropped meanwhile shows as a newer row.
    intent = await registry.pending_overwrite(record.handle)
    fresh = await row_of(registry, record)
    if fresh.version != record.version:
        return None, fresh
    if intent is None:
        return record, fresh
    new = record.with_(
        version=intent.version, size=intent.size, sha256=intent.sha256, mimetype=intent.mimetype
    )
    if clock.slack is not None and modified < intent.created - clock.slack:
        return record, fresh
    if clock.slack is not None and modified >= intent.created + clock.slack:
        return new, fresh
    if size == record.size != intent.size:
        return record, fresh
    if size == intent.size != record.size:
        return new, fresh
    return None, fresh


async def _open(
    provider: Provider,
    container: str,
    key: str,
    info: ObjectInfo | None,
    span: Span | None,
    body: bool = True,
    size: int | None = None,
) -> Opened:
    """The version ``info`` describes, or (None) the current one: a whole read in one
    request where the provider can, a range of a file whose ``size`` the row says too,
    anything else a ``stat`` first."""
    if info is None:
        if span is None and body:
            return await _open_whole(provider, container, key)
        if span is not None and body and size is not None:
            return await _open_span(provider, container, key, span, size)
        info = await provider.stat(container, key)
    return await open_version(provider, container, key, info, span, body)


async def _open_span(provider: Provider, container: str, key: str, span: Span, size: int) -> Opened:
    """The range the row's ``size`` gives, read with the version it is cut from (one request
    where the provider can); when that version's size gives another range, that version's
    own range, pinned."""
    try:
        bounds = span(size)
    except errors.RangeNotSatisfiable:
        bounds = None  # for the row's size: the object's own size decides
    if bounds is None or bounds[1] < bounds[0]:
        return await _open_stated(provider, container, key, span)
    stream = open_span(provider, container, key, *bounds)
    try:
        info = await anext(stream)
        if not isinstance(info, ObjectInfo):
            raise errors.StorageError("storage: a range read did not say what it sent")
        if span(info.size) != bounds:
            await close(stream)
            return await open_version(provider, container, key, info, span)
        first = await anext(stream, None)
        if isinstance(first, ObjectInfo):
            raise errors.StorageError("storage: a range read said twice what it sent")
    except errors.RangeNotSatisfiable:
        await close(stream)  # the object is shorter than the row says: its size decides
        return await _open_stated(provider, container, key, span)
    except BaseException:
        await close(stream)
        raise
    return Opened(info, bounds, _prepended(first, cast(Chunks, stream)))


async def _open_stated(provider: Provider, container: str, key: str, span: Span) -> Opened:
    return await open_version(provider, container, key, await provider.stat(container, key), span)


async def _open_whole(provider: Provider, container: str, key: str) -> Opened:
    stream = open_whole(provider, container, key)
    try:
        info = await anext(stream)
        first = await anext(stream, None)
    except BaseException:
        await close(stream)
        raise
    if not isinstance(info, ObjectInfo) or isinstance(first, ObjectInfo):
        await close(stream)
        raise errors.StorageError("storage: a whole read did not say what it sent")
    return Opened(info, None, _prepended(first, cast(Chunks, stream)))


async def back_off(attempt: int) -> None:
    # Jittered, so readers that lost to one overwrite do not all come back together; the
    # next overwrite of a hot file is then likely to land after they have opened theirs.
    await asyncio.sleep(random.uniform(0, BACKOFF * 2 ** min(attempt, 4)))


async def row_of(registry: FileRows, record: FileRecord) -> FileRecord:
    """The handle's row as it is now: ``HandleNotFound`` when it is gone."""
    fresh = await registry.get(record.handle)
    if fresh is None:
        raise errors.HandleNotFound(handle=record.handle)
    return fresh


async def _nothing() -> Chunks:
    return
    yield b""  # pragma: no cover - makes this an async generator


async def _prepended(first: bytes | None, rest: AsyncIterator[bytes]) -> Chunks:
    try:
        if first is not None:
            yield first
            async for chunk in rest:
                yield chunk
    finally:
        await close(rest)


async def close(chunks: AsyncIterator[object]) -> None:
    aclose = getattr(chunks, "aclose", None)
    if aclose is not None:
        with contextlib.suppress(Exception):
            await aclose()
