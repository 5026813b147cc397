"""Which metadata fields exist, which come by default, and their values for a record."""

from __future__ import annotations

from typing import Any

from stowage.core.examine import HASHES
from stowage.registry.base import FileRecord
from stowage.storage.base import ObjectInfo

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
    "size", "mimetype", "filename", "width", "height", "uploaded", "writeable", "cloud",
    "source_url", "exif",
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
