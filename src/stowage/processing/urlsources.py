"""External sources (``/<APIKEY>/<tasks>/<URL>``), kept by URL with the validators the
origin sent (``ETag``, ``Last-Modified``) and revalidated on every use: a conditional
fetch through the URL guard answers 304 and the copy is used, or 200 and the copy is
replaced. An origin that sends no validator, ``Cache-Control: no-store`` or ``Vary: *`` is
fetched whole every time and not kept; one that declares a length past the limit is
refused before its body is read.

Every request still passes the app's security (the policy's ``url`` rule) before this
runs: a copy is shared between apps, a permission never. Copies are whole files renamed
into place, so a job reading one never sees half of another; the oldest beyond
``MAX_ENTRIES`` are removed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from stowage import errors
from stowage.core.fetch import Allowed, Fetched, Fetcher
from stowage.processing import metrics

MAX_ENTRIES = 512
Saver = Callable[[AsyncIterator[bytes], Path, int], Awaitable[None]]


@dataclass(frozen=True)
class Held:
    """A source read from a URL: the file, the type the origin gave it and its name
    (``dispositions.filename``: the origin's ``Content-Disposition``, else the last part
    of the URL it came from; None: nothing usable)."""

    path: Path
    content_type: str
    reused: bool  # the origin answered 304: the kept copy was used
    filename: str | None = None


class UrlSources:
    def __init__(
        self, folder: Path, fetcher: Fetcher, save: Saver, max_bytes: int, kept_bytes: int
    ) -> None:
        self.folder = folder
        self.fetcher = fetcher
        self.save = save  # streams to a file, refusing more than max_bytes
        self.max_bytes = max_bytes
        self.kept_bytes = kept_bytes  # the copies' bytes together
        _sweep(folder)

    @contextlib.asynccontextmanager
    async def opened(
        self,
        url: str,
        allowed: Allowed | None = None,
        owner: str | None = None,
        slot_wait: float | None = None,
    ) -> AsyncIterator[Held]:
        """``url``'s file; ``allowed`` is asked about each address a redirect leads to;
        ``owner``: the app whose fetch it is (its share of the fetch slots);
        ``slot_wait``: the most seconds to wait for a slot (None: the fetcher's own)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        name = hashlib.sha256(url.encode()).hexdigest()
        body, meta = self.folder / f"{name}.src", self.folder / f"{name}.json"
        # The job reads its own name for the copy (a hard link: no bytes copied), taken
        # before the fetch: a newer copy renamed over ``body``, or an eviction, meanwhile
        # does not change or remove it.
        mine = self.folder / f"read-{secrets.token_hex(12)}"
        try:
            # Validators before the copy (the writer replaces the copy first): an older
            # pair read with a newer copy only costs a whole fetch, never a stale copy.
            kept = _read_meta(meta, url)
            kept = kept if _pinned(body, mine) else None
            validators = _validators(kept)
            validated = kept.get("source") or url if kept is not None else None
            fetched = await self.fetcher.open(
                url, validators, allowed, owner, slot_wait=slot_wait, validated=validated
            )
            if fetched.not_modified and kept is not None:
                await _close(fetched.chunks)
                with contextlib.suppress(OSError):
                    os.utime(mine)  # the same inode as the kept copy: recently used
                # a copy kept before names were kept: the 304's own headers and URL name it
                kept_name: str | None = kept.get("filename", fetched.filename)
                yield Held(mine, kept.get("content_type", ""), reused=True, filename=kept_name)
                return
            mine.unlink(missing_ok=True)  # the pinned copy is stale: never written into
            if fetched.length is not None and fetched.length > self.max_bytes:
                # refused on its declared length, not after as many bytes as a slow
                # origin cares to send (it held a fetch slot until the read timeout)
                await _close(fetched.chunks)
                metrics.REFUSALS.inc(code=errors.PayloadTooLarge.code)
                raise errors.PayloadTooLarge(max_bytes=self.max_bytes)
            await self.save(fetched.chunks, mine, self.max_bytes)
            content_type = (fetched.content_type or "").lower()
            if not _keepable(fetched):
                _forget(body, meta)  # an origin that now says no-store leaves no copy here
            else:
                _keep(mine, body)
                record = {"url": url, "etag": fetched.etag, "last_modified": fetched.last_modified}
                record["source"] = fetched.url  # the address they are of (after redirects)
                # After the copy: a reader pairing the old validators with the new copy
                # only fetches again; the other way round would keep a stale copy.
                named = {"content_type": content_type, "filename": fetched.filename}
                _write_meta(meta, {**record, **named})
                self._evict()
            yield Held(mine, content_type, reused=False, filename=fetched.filename)
        finally:
            mine.unlink(missing_ok=True)

    def _evict(self) -> None:
        """The least recently used copies past ``MAX_ENTRIES`` or ``kept_bytes`` (without
        the bound, 512 copies of 200 MB URLs an open app's key asked for held 100 GB)."""
        sizes: dict[Path, tuple[float, int]] = {}  # each copy's time of last use and size
        for body in self.folder.glob("*.src"):
            with contextlib.suppress(OSError):
                found = body.stat()
                sizes[body] = (found.st_mtime, found.st_size)
        newest_first = sorted(sizes, key=lambda body: sizes[body][0], reverse=True)
        total = 0
        for count, body in enumerate(newest_first, start=1):
            total += sizes[body][1]
            if count > MAX_ENTRIES or total > self.kept_bytes:
                with contextlib.suppress(OSError):
                    body.unlink()
                    body.with_suffix(".json").unlink()


def _keepable(fetched: Fetched) -> bool:
    """A copy may be kept for revalidation: the origin sent a validator, no
    ``Cache-Control: no-store`` (RFC 9111 5.2.2.5: no cache stores any part of the
    answer) and no ``Vary: *`` (no later request is known to match it)."""
    directives = {part.split("=", 1)[0].strip().lower() for part in _items(fetched.cache_control)}
    validated = _sendable(fetched.etag) or _sendable(fetched.last_modified)
    return validated and "no-store" not in directives and "*" not in _items(fetched.vary)


#: What no header line may carry (C0 controls but tab, DEL) and what a byte that was no
#: UTF-8 was decoded to (lone surrogates): a validator holding one cannot be sent back.
_UNSENDABLE = re.compile("[\x00-\x08\x0a-\x1f\x7f\ud800-\udfff]")


def _sendable(validator: str | None) -> bool:
    """An ETag ``"a<DEL>b"`` was kept, then sent back as If-None-Match: aiohttp refused
    the header (ValueError) and every later use of the URL answered 500."""
    return bool(validator and validator.strip()) and not _UNSENDABLE.search(validator or "")


def _items(header: str | None) -> list[str]:
    return [item.strip() for item in (header or "").split(",")]


def _forget(body: Path, meta: Path) -> None:
    for path in (body, meta):
        path.unlink(missing_ok=True)


def _sweep(folder: Path) -> None:
    """Links and half-written files a crashed process left; old ones only (by ctime,
    which a new link sets, unlike mtime): another worker process of this node may be
    using a young one."""
    stale = time.time() - 3600
    for pattern in ("read-*", "*.new-*", "meta-*"):
        for path in folder.glob(pattern) if folder.is_dir() else []:
            with contextlib.suppress(OSError):
                if path.stat().st_ctime < stale:  # a link made now changes ctime
                    path.unlink()


def _pinned(body: Path, mine: Path) -> bool:
    try:
        os.link(body, mine)
    except FileNotFoundError:
        return False
    return True


def _keep(copy: Path, body: Path) -> None:
    """``copy`` becomes the kept one too: linked under a temporary name, renamed over."""
    staged = body.with_suffix(".new-" + copy.name)
    os.link(copy, staged)
    os.replace(staged, body)


def _validators(kept: dict[str, str] | None) -> dict[str, str]:
    if kept is None:
        return {}
    found = {"If-None-Match": kept.get("etag"), "If-Modified-Since": kept.get("last_modified")}
    return {k: v for k, v in found.items() if v is not None and _sendable(v)}


def _read_meta(meta: Path, url: str) -> dict[str, str] | None:
    try:
        found = json.loads(meta.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) and found.get("url") == url else None


def _write_meta(meta: Path, values: dict[str, str | None]) -> None:
    fd, name = tempfile.mkstemp(prefix="meta-", dir=meta.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(values, handle)
    os.replace(name, meta)


async def _close(chunks: AsyncIterator[bytes]) -> None:
    close = getattr(chunks, "aclose", None)
    if close is not None:
        await close()
