"""A storage service's HTTP status, as the neutral storage error: one table for every
provider that speaks HTTP (GCS, Azure, Swift); and the whole size a ranged answer names."""

from __future__ import annotations

from stowage import errors

STATUS_ERRORS: dict[int, type[errors.StorageError]] = {
    401: errors.StorageAccessDenied,
    403: errors.StorageAccessDenied,
    404: errors.StorageNotFound,
    409: errors.StorageConflict,
    412: errors.StorageConflict,
    413: errors.StorageFull,
    429: errors.StorageUnavailable,
    507: errors.StorageFull,
}


def error_for(status: int, message: str) -> errors.StowageError:
    """The error for a failed answer; ``message`` names the provider, never a secret."""
    if status == 416:
        return errors.RangeNotSatisfiable()
    cls = STATUS_ERRORS.get(status)
    if cls is None:
        cls = errors.StorageUnavailable if status >= 500 else errors.StorageError
    return cls(message)


def whole_size(content_range: object, store: str) -> int:
    """The object's size a ranged answer's ``Content-Range`` names (``bytes 0-499/5585``)."""
    total = str(content_range or "").rpartition("/")[2]
    if not total.isdigit():
        raise errors.StorageError(f"{store}: a range answered without the object's size")
    return int(total)
