"""``stowage derivatives prune``: removes the derivatives no request can reach.

A server removes a file's other derivatives when the file changes or is deleted
(``DerivativeCache.forget``). What it leaves: the derivatives an older release rendered
(another rendering generation) of files that never change again, and those of a change
whose removal did not finish (a node stopped first, a store that failed). This walks the
whole derivative store once, asks the registry for each handle's row, and removes the
keys that are not its current version's and generation's. Safe while servers run: a
derivative removed in a race with a new one is made again on its next request.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from stowage import errors
from stowage.processing.cache import PREFIX, DerivativeCache, current_prefix, delete
from stowage.registry.base import FileRecord
from stowage.storage.base import Lists

RowOf = Callable[[str], Awaitable[FileRecord | None]]


@dataclass
class Pruned:
    checked: int = 0
    unreachable: int = 0  # removed, or to remove in a dry run

    def line(self) -> str:
        return f"{self.checked:,} derivatives checked, {self.unreachable:,} unreachable"


async def prune(
    cache: DerivativeCache,
    row_of: RowOf,
    echo: Callable[[str], None],
    remove: bool = True,
    every: int = 1000,
) -> Pruned:
    """Every unreachable derivative removed (or only counted: ``remove=False``), with a
    line of progress every ``every`` keys."""
    provider = cache.provider
    if not isinstance(provider, Lists):
        raise errors.NotSupported("the derivative store cannot list its keys")
    found = Pruned()
    folder, keep = "", None  # the handle's folder and its current keys' start
    async for key in provider.keys(cache.container, PREFIX + "/"):
        handle_folder = _handle_folder(key)
        if handle_folder is None:
            continue
        if handle_folder != folder:  # keys come sorted: one registry read per handle
            folder, keep = handle_folder, await _current(handle_folder, row_of)
        found.checked += 1
        if keep is None or not key.startswith(keep):
            found.unreachable += 1
            if remove:
                await delete(provider, cache.container, key)
        if found.checked % every == 0:
            echo(found.line())
    return found


def _handle_folder(key: str) -> str | None:
    """``<PREFIX>/<api key>/<handle>/``, or None for a key that is not in a handle's
    folder: a kept screenshot (``<PREFIX>/_screenshots/<digest>``, shotcache.py), which
    expires on its own."""
    parts = key.split("/")
    if len(parts) < 4 or parts[0] != PREFIX:
        return None
    return "/".join(parts[:3]) + "/"


async def _current(folder: str, row_of: RowOf) -> str | None:
    """What the folder's reachable keys start with; None when the handle is gone (or is
    another app's: a handle is never reused, so that folder is a leftover too)."""
    _, api_key, handle, _ = folder.split("/")
    record = await row_of(handle)
    if record is None or record.api_key != api_key:
        return None
    return current_prefix(record)
