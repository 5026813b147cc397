"""Overwrites that a crash cannot leave half recorded (checklist 49).

An overwrite commits the new bytes in storage, then updates the file's row (size,
SHA-256, type, version). A crash between the two would leave new bytes that the old row
describes. So once the new body has ended, and before the provider commits it, the
overwrite records an ``OverwriteIntent``: the row it is about to write. The row update
drops it. An intent still there means the overwrite stopped in between, or the outcome
of its commit is unknown (the write raised after the body ended). ``settle`` then makes
the row describe what storage holds: the intent is adopted when the object has its size
and SHA-256, and dropped otherwise (the commit never happened, or was lost, e.g. a rename
undone by a power loss: the old version is stored). Nothing here knows the provider.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass

from stowage import errors
from stowage.core import examine, reading, streams
from stowage.core.providers import Providers
from stowage.core.security import Policy, check_size
from stowage.core.sources import Prepared
from stowage.registry.base import FileRecord, OverwriteIntent, OverwriteRows
from stowage.storage.base import Provider, WriteOptions

log = logging.getLogger("stowage.core")
#: A handle locked longer than this is being overwritten live: its intent is left for the
#: next pass (start-up must not wait on another node's long upload).
LOCK_WAIT = 10.0
ADOPTED, DROPPED, KEPT = "adopted", "dropped", "kept"


@dataclass(frozen=True)
class Overwrite:
    """New bytes for a stored file: ``current`` is its row, read under the handle's lock."""

    provider: Provider
    current: FileRecord
    prepared: Prepared
    policy: Policy | None
    mimetype: str


async def write_over(registry: OverwriteRows, providers: Providers, job: Overwrite) -> FileRecord:
    """Commits the new bytes, then the row; the caller holds the handle's lock. The
    intent is recorded when the body has ended, before the provider commits: a crash
    between commit and row update is settled later."""
    provider, current, prepared, mimetype = job.provider, job.current, job.prepared, job.mimetype
    intents: list[OverwriteIntent] = []

    def updated() -> FileRecord:
        return current.with_(
            size=prepared.digest.size,
            sha256=prepared.digest.sha256,
            mimetype=mimetype,
            version=current.version + 1,
        )

    async def at_end() -> None:
        check_size(job.policy, prepared.digest.size)  # before the commit: the old version stays
        intent = intent_for(updated())
        if not await registry.intend_overwrite(intent):
            raise errors.Conflict("the file changed during this overwrite; nothing written")
        intents.append(intent)

    chunks = streams.then(prepared.chunks, at_end)
    options = WriteOptions(content_type=mimetype, access=current.access)
    try:
        await provider.write(current.container, current.key, chunks, options)
    except BaseException:
        if intents:  # the commit may have happened before the error: ask storage
            await _settle_quietly(registry, providers, intents[0])
        raise
    record = updated()
    if not await registry.update(record):
        raise errors.HandleNotFound(handle=current.handle)
    return record


async def _settle_quietly(
    registry: OverwriteRows, providers: Providers, intent: OverwriteIntent
) -> None:
    # Any failure: the clean-up must not replace the error that made it necessary.
    try:
        await settle(registry, providers, intent)
    except Exception:
        log.warning("settling a failed overwrite did not complete", exc_info=True)


def intent_for(record: FileRecord) -> OverwriteIntent:
    """The intent of an overwrite that will write ``record`` into the row."""
    return OverwriteIntent(
        record.handle, record.version, record.size, record.sha256, record.mimetype
    )


async def settle_all(registry: OverwriteRows, providers: Providers, older_than: float) -> int:
    """Settles the intents recorded before ``older_than``; returns how many it settled."""
    settled = 0
    for intent in await registry.overwrite_intents(older_than):
        settled += await _settle_locked(registry, providers, intent) != KEPT
    return settled


async def _settle_locked(
    registry: OverwriteRows, providers: Providers, intent: OverwriteIntent
) -> str:
    # Under the handle's lock, an overwrite still running (another worker or node) ends
    # first and its row update drops its own intent: only a dead writer's is judged.
    async with contextlib.AsyncExitStack() as stack:
        try:
            async with asyncio.timeout(LOCK_WAIT):
                await stack.enter_async_context(registry.handle_lock(intent.handle))
        except TimeoutError:
            return KEPT
        return await settle(registry, providers, intent)


async def settle(registry: OverwriteRows, providers: Providers, intent: OverwriteIntent) -> str:
    """Adopts or drops one intent; the caller holds its handle's lock. KEPT when storage
    cannot answer now: the next recovery (or janitor pass) tries again."""
    record = await registry.get(intent.handle)
    if record is None or record.version != intent.version - 1:
        # Removed, or moved on by a later overwrite: this write lost, whatever storage holds.
        await registry.settle_overwrite(intent, adopt=False)
        return DROPPED
    try:
        adopt = await _holds(providers, record, intent)
    except errors.StowageError as exc:
        log.warning("interrupted overwrite of %s not settled yet: %s", intent.handle, exc)
        return KEPT
    outcome = ADOPTED if await registry.settle_overwrite(intent, adopt) else DROPPED
    log.info("interrupted overwrite of %s settled: %s", intent.handle, outcome)
    return outcome


async def _holds(providers: Providers, record: FileRecord, intent: OverwriteIntent) -> bool:
    """Whether storage holds the intent's bytes at the record's key."""
    provider = providers.provider_for(await providers.app(record.api_key), record.provider)
    try:
        info = await provider.stat(record.container, record.key)
    except errors.StorageNotFound:
        return False
    if info.size != intent.size:
        return False  # no need to read it
    chunks = reading.whole(provider, record.container, record.key)
    found = await examine.hash_stream(chunks, ["sha256"])
    return found["sha256"] == intent.sha256
