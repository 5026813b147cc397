"""A storage service's HTTP status, as the neutral storage error: one table for every
provider that speaks HTTP (GCS, Azure, Swift)."""

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
