"""Reading Swift's answers: expected statuses, object facts, bulk-delete reports, paths."""

from __future__ import annotations

import time
from email.utils import parsedate_to_datetime
from typing import Any, NoReturn
from urllib.parse import quote

import aiohttp

from stowage import errors
from stowage.storage.base import ObjectInfo
from stowage.storage.status import error_for


def object_path(container: str, key: str | None = None) -> str:
    path = "/" + quote(container, safe="")
    return path if key is None else f"{path}/{quote(key, safe='/')}"


def is_slo(resp: aiohttp.ClientResponse) -> bool:
    return resp.headers.get("X-Static-Large-Object", "").lower() == "true"


def etag(resp: aiohttp.ClientResponse) -> str:
    return resp.headers.get("Etag", "").strip('"')


def info(resp: aiohttp.ClientResponse, size: int) -> ObjectInfo:
    modified = time.time()
    if stamp := resp.headers.get("X-Timestamp"):
        modified = float(stamp)
    elif last := resp.headers.get("Last-Modified"):
        modified = parsedate_to_datetime(last).timestamp()
    return ObjectInfo(size, etag(resp), modified)


def check_bulk_delete(report: Any) -> None:
    status = str(report.get("Response Status", "200"))
    if status.startswith("404"):
        raise errors.StorageNotFound("rackspace: object not found")
    if not status.startswith("2") or report.get("Errors"):
        raise errors.StorageError(f"rackspace: large object delete failed ({status})")


def expect_put(resp: aiohttp.ClientResponse, container: str) -> None:
    if resp.status == 404:
        raise errors.StorageNotFound(f"rackspace: container {container!r} does not exist")
    if resp.status == 202:
        # Swift's answer when its object servers already hold a write of this name with a
        # timestamp at least as new (a concurrent PUT won): this one was not applied.
        raise errors.StorageConflict(
            "rackspace: a concurrent write of this object landed first; this one was not applied"
        )
    expect(resp, 201)


def expect(resp: aiohttp.ClientResponse, *ok: int) -> None:
    if resp.status in ok:
        return
    raise_for(resp)


def raise_for(resp: aiohttp.ClientResponse) -> NoReturn:
    message = f"rackspace: {resp.method} answered {resp.status} {resp.reason or ''}".strip()
    raise error_for(resp.status, message)
