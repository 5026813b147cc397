"""Storing bytes under a handle the caller gives, not a new one: files moved in from another
service (``stowage import``) or another backend (``stowage migrate``) keep their handles, so
the URLs saved before the move keep working.

The steps are a store's (``Stowage._write_new``, docs/architecture.md "One store"): the
registry reserves a pending row, the provider writes the bytes atomically, the caller's
check sees their size and SHA-256, the row is committed only then; on any failure the
object is deleted and the row abandoned. The pending row carries the time of the write,
not the file's own upload time: recovery takes a pending row older than its grace for one
a crash left, and an imported file's upload time may be years old. The commit sets it.

No HTTP and no policy: these are operators' operations, run by the CLI with the registry's
own access. Handles keep the rules of ``core/names.py``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Callable, Collection
from dataclasses import dataclass

from stowage import errors
from stowage.core import filetypes, headersafe, names, overwrites, streams
from stowage.core.providers import Providers
from stowage.core.sources import Prepared
from stowage.registry.base import App, FileRecord, FileRows, Registry
from stowage.storage.base import WriteOptions

#: Called with the size and SHA-256 of what was written, before the commit; raises a
#: ``StowageError`` when they are not what the caller expected (nothing is then kept).
Check = Callable[[int, str], None]


@dataclass(frozen=True)
class Given:
    """What a file keeps from where it came from."""

    handle: str
    filename: str
    mimetype: str
    uploaded: float  # epoch milliseconds
    access: str = "private"
    path: str | None = None  # the storage key to use as is; default ``<id>_<filename>``
    container: str | None = None  # default: the provider's
    source_url: str | None = None


def checked_handle(handle: str) -> str:
    if not names.is_handle(handle):
        raise errors.InvalidParameter(
            "a handle is 20 characters of letters, digits, '_' or '-'", parameter="handle"
        )
    return handle


async def store_under(
    rows: FileRows,
    providers: Providers,
    app: App,
    api_name: str,
    given: Given,
    chunks: AsyncIterator[bytes],
    check: Check | None = None,
) -> FileRecord:
    """Stores ``chunks`` as handle ``given.handle`` of ``app`` in its provider ``api_name``.
    ``KeyInUse`` when the handle (or the key) is already taken, stored or pending."""
    provider = providers.provider_for(app, api_name)
    filename = names.clean_filename(given.filename)
    mimetype = (
        headersafe.media_type(given.mimetype)
        if given.mimetype
        else filetypes.guess_from_name(filename) or "application/octet-stream"
    )
    if given.access not in ("public", "private"):
        raise errors.InvalidParameter("access must be public or private", parameter="access")
    record = FileRecord(
        handle=checked_handle(given.handle),
        api_key=app.api_key,
        provider=api_name,
        location=provider.location,
        container=names.clean_container(given.container)
        if given.container
        else provider.default_container,
        key=names.storage_key(given.path, filename),
        filename=filename,
        mimetype=mimetype,
        uploaded=time.time() * 1000,  # until the commit: see the module's docstring
        source_url=given.source_url,
        access=given.access,
    )
    digest = streams.Digest()
    await rows.reserve(record)
    written = False
    try:
        options = WriteOptions(content_type=record.mimetype, access=record.access)
        await provider.write(record.container, record.key, _checked(chunks, digest, check), options)
        written = True
        stored = await provider.stat(record.container, record.key)
        if stored.size != digest.size:
            raise errors.IntegrityError(
                f"storage holds {stored.size} bytes, {digest.size} were written"
            )
        record = record.with_(size=digest.size, sha256=digest.sha256, uploaded=given.uploaded)
        await rows.commit(record)
    except BaseException:
        if written:
            with contextlib.suppress(errors.StowageError):
                await provider.delete(record.container, record.key)
        await rows.abandon(record.handle)
        raise
    return record


async def replace_under(
    registry: Registry,
    providers: Providers,
    app: App,
    given: Given,
    chunks: AsyncIterator[bytes],
    check: Check | None = None,
) -> FileRecord:
    """Replaces the content of a stored handle of ``app`` the way an overwrite does
    (core/overwrites.py: intent, atomic write, row), then gives the row the filename and
    upload time of ``given``. A failed check leaves the stored version as it was."""
    async with registry.handle_lock(given.handle):
        current = await registry.get(given.handle)
        if current is None or current.api_key != app.api_key:
            raise errors.HandleNotFound(handle=given.handle)
        if current.cloud:
            raise errors.NotWriteable()
        provider = providers.provider_for(app, current.provider)
        digest = streams.Digest()
        prepared = Prepared(_checked(chunks, digest, check), b"", None, None, digest=digest)
        mimetype = headersafe.media_type(given.mimetype) if given.mimetype else current.mimetype
        job = overwrites.Overwrite(provider, current, prepared, None, mimetype)
        record = await overwrites.write_over(registry, providers, job)
        record = record.with_(
            filename=names.clean_filename(given.filename), uploaded=given.uploaded
        )
        await registry.update(record)
    return record


def _checked(
    chunks: AsyncIterator[bytes], digest: streams.Digest, check: Check | None
) -> AsyncIterator[bytes]:
    """The chunks, hashed; the check runs when they have ended and before the provider
    commits (a write is atomic: a source that raises leaves nothing new behind)."""

    async def at_end() -> None:
        if check is not None:
            check(digest.size, digest.sha256)

    return streams.then(digest.tap(chunks), at_end)


async def discard_pending(
    rows: FileRows, providers: Providers, app: App, handles: Collection[str]
) -> int:
    """Removes the pending rows (and their objects) of ``handles``: what a killed import
    left. Only for handles the caller owns alone (an import holds its app's job lock)."""
    wanted = set(handles)
    removed = 0
    for record in await rows.pending(older_than=time.time() + 1):
        if record.handle not in wanted or record.api_key != app.api_key:
            continue
        with contextlib.suppress(errors.StowageError):
            provider = providers.provider_for(app, record.provider)
            await provider.delete(record.container, record.key)
        await rows.abandon(record.handle)
        removed += 1
    return removed
