"""Which metadata fields exist, which come by default, and reading them for a record:
from its row, a stat or one read of the object (hashes), and its EXIF."""

from __future__ import annotations

from typing import Any

from stowage.config import Settings
from stowage.core import examine, reading
from stowage.core.examine import HASHES
from stowage.registry.base import FileRecord
from stowage.storage.base import LocalFiles, ObjectInfo, Provider

#: Returned when a request selects nothing (spec 2.4).
DEFAULT = (
    "mimetype",
    "uploaded",
    "container",
    "writeable",
    "filename",
    "location",
    "key",
    "path",
    "size",
)
#: The boolean selectors of spec 4.5, in the order results are returned.
SELECTORS = (
    "size", "mimetype", "filename", "uploaded", "writeable", "cloud", "source_url", "exif",
    "upload_status", *HASHES, "location", "path", "container",
)  # fmt: skip


def wanted(selected: set[str]) -> list[str]:
    return [name for name in SELECTORS if name in selected] or list(DEFAULT)


def record_fields(record: FileRecord, info: ObjectInfo) -> dict[str, Any]:
    """Every field answered from the registry row and a stat of the object."""
    return {
        "size": info.size,
        "mimetype": record.mimetype,
        "filename": record.filename,
        "uploaded": record.uploaded,
        "writeable": not record.cloud,
        "cloud": record.cloud,
        "source_url": record.source_url,
        "upload_status": "complete",  # rows of unfinished writes are invisible
        "location": record.location,
        "path": record.key,
        "container": record.container,
        "key": record.key,
    }


async def read(
    settings: Settings, provider: Provider, record: FileRecord, selected: set[str]
) -> dict[str, Any]:
    """The fields ``selected`` asks for (the defaults when it asks for none)."""
    names = wanted(selected)
    hashes = [h for h in HASHES if h in names]
    opened = await reading.open_current(provider, record.container, record.key) if hashes else None
    info = opened.info if opened else await provider.stat(record.container, record.key)
    fields = record_fields(record, info)
    out = {name: fields[name] for name in names if name in fields}
    if opened:  # the hashes of the version whose size is reported
        out.update(await examine.hash_stream(opened.chunks, hashes))
    if "exif" in names:
        out["exif"] = await _exif(settings, provider, record)
    return out


async def _exif(settings: Settings, provider: Provider, record: FileRecord) -> dict[str, Any]:
    local = (
        provider.local_path(record.container, record.key)
        if isinstance(provider, LocalFiles)
        else None
    )

    def span(size: int) -> tuple[int, int]:
        return 0, min(size, settings.exif_max_bytes) - 1

    return await examine.read_exif(
        reading.whole(provider, record.container, record.key, span),
        local,
        max_bytes=settings.exif_max_bytes,
        max_pixels=settings.exif_max_pixels,
        timeout=settings.exif_timeout,
        spool_dir=settings.data_dir / "tmp",
    )
