"""``zip/[h1,h2,...]``: the stored files in one zip archive, streamed as it is made.

Memory stays flat whatever the files' sizes: each file is read in chunks and every chunk
is sent as soon as ``zipfile`` has written it (entries are stored, not compressed again:
images and most uploads are compressed already; sizes and CRCs follow each entry in a
data descriptor, so nothing is seeked back). Names come from the files' rows, made safe
for any unzip tool (no folders, no ``..``, no control characters) and unique in the
archive.
"""

from __future__ import annotations

import io
import re
import time
import zipfile
from collections.abc import AsyncIterator, Callable

from stowage import errors

Opener = Callable[[], AsyncIterator[bytes]]
NAME, MIMETYPE = "files.zip", "application/zip"  # the archive as sent, and as stored
_UNSAFE = re.compile(r"[\x00-\x1f\x7f/\\:*?\"<>|]")
MAX_NAME = 200


class _Sink(io.RawIOBase):
    """What zipfile writes to: kept until the stream takes it (not seekable)."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:  # type: ignore[override]
        self._parts.append(bytes(data))
        return len(data)

    def take(self) -> bytes:
        data = b"".join(self._parts)
        self._parts.clear()
        return data


async def stream(entries: list[tuple[str, Opener]]) -> AsyncIterator[bytes]:
    """The archive of ``entries`` (name, opener of the file's chunks), chunk by chunk."""
    sink = _Sink()
    stamp = time.gmtime()[:6]
    archive = zipfile.ZipFile(sink, "w", compression=zipfile.ZIP_STORED, allowZip64=True)
    try:
        for name, opener in entries:
            info = zipfile.ZipInfo(name, date_time=stamp)
            with archive.open(info, "w", force_zip64=True) as entry:
                async for chunk in opener():
                    entry.write(chunk)
                    if data := sink.take():
                        yield data
            yield sink.take()
        archive.close()
        yield sink.take()
    finally:
        # Cut short (a file gone as it was read, the client gone): no end record is due,
        # and none may be written later, when the sink is gone (ZipFile.__del__ raised).
        archive.fp = None


def names(filenames: list[str], fallbacks: list[str]) -> list[str]:
    """Safe, unique entry names: ``a.jpg``, ``a (2).jpg``; a name that is empty once
    made safe becomes its fallback (the handle)."""
    made: list[str] = []
    seen: set[str] = set()
    for filename, fallback in zip(filenames, fallbacks, strict=True):
        name = _safe(filename) or _safe(fallback) or "file"
        stem, dot, extension = name.rpartition(".")
        if not stem:
            stem, dot, extension = name, "", ""
        candidate, count = name, 1
        while candidate.lower() in seen:
            count += 1
            candidate = f"{stem} ({count}){dot}{extension}"
        seen.add(candidate.lower())
        made.append(candidate)
    return made


def _safe(filename: str) -> str:
    base = re.split(r"[/\\]", filename)[-1]
    cleaned = _UNSAFE.sub("_", base).strip(" .")
    return cleaned[:MAX_NAME]


def is_zip(task_names: list[str]) -> bool:
    """Whether a chain of these tasks is ``zip``, which takes no other (``store`` aside:
    it is not among a chain's tasks)."""
    if "zip" in task_names and task_names != ["zip"]:
        raise errors.InvalidParameter("zip takes no other tasks", parameter="zip")
    return task_names == ["zip"]
