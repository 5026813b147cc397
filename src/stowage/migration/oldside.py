"""The old service, as ``stowage import`` reads it: a file's bytes and its metadata from its
CDN, with the old app's credentials, through the guarded fetcher (core/fetch.py).

    <cdn>/<HANDLE>?key=<APIKEY>&policy=<policy>&signature=<signature>
    <cdn>/<HANDLE>/metadata?size=true&...&key=<APIKEY>&policy=<policy>&signature=<signature>

the forms the ruby, java and php SDKs use for downloads and the python SDK for metadata
(docs: /work/shared/compat), which the hosted service and Stowage both answer; each
credential only when given. With the old app's secret a policy for ``read`` and ``stat``
is made here; a policy and signature made elsewhere may be given instead.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from stowage import errors
from stowage.assembly import build_fetcher
from stowage.config import Settings
from stowage.core.fetch import Fetched, Fetcher
from stowage.core.security import encode_policy, sign

METADATA_FIELDS = ("size", "filename", "mimetype", "uploaded", "md5", "sha256")
MAX_METADATA_BYTES = 1 << 20
POLICY_LIFETIME = 7 * 24 * 3600


@dataclass(frozen=True)
class OldService:
    cdn: str  # e.g. https://cdn.filestackcontent.com
    api_key: str | None = None
    policy: str | None = None
    signature: str | None = None

    @classmethod
    def with_secret(cls, cdn: str, api_key: str | None, secret: str) -> OldService:
        policy = encode_policy(
            {"expiry": int(time.time()) + POLICY_LIFETIME, "call": ["read", "stat"]}
        )
        return cls(cdn, api_key, policy, sign(secret, policy))

    def _credentials(self) -> dict[str, str]:
        found = {"key": self.api_key, "policy": self.policy, "signature": self.signature}
        return {name: value for name, value in found.items() if value}

    def file_url(self, handle: str) -> str:
        return _url(f"{self.cdn.rstrip('/')}/{handle}", self._credentials())

    def metadata_url(self, handle: str) -> str:
        fields = {name: "true" for name in METADATA_FIELDS}
        return _url(f"{self.cdn.rstrip('/')}/{handle}/metadata", {**fields, **self._credentials()})


def _url(base: str, query: dict[str, str]) -> str:
    return f"{base}?{urlencode(query)}" if query else base


def import_fetcher(settings: Settings, concurrency: int) -> Fetcher:
    """The guarded fetcher with the service's fetch settings; files as large as a store
    may be (``max_upload_bytes``)."""
    return build_fetcher(settings, max_bytes=settings.max_upload_bytes, max_concurrent=concurrency)


async def metadata(fetcher: Fetcher, old: OldService, handle: str) -> dict[str, Any]:
    fetched = await fetcher.open(old.metadata_url(handle))
    body = await read_small(fetched)
    try:
        found = json.loads(body)
    except ValueError as exc:
        raise errors.UpstreamError("the old side's metadata is not JSON") from exc
    if not isinstance(found, dict):
        raise errors.UpstreamError("the old side's metadata is not a JSON object")
    return found


async def read_small(fetched: Fetched) -> bytes:
    body = bytearray()
    try:
        async for chunk in fetched.chunks:
            body += chunk
            if len(body) > MAX_METADATA_BYTES:
                raise errors.UpstreamError("the old side's metadata is too large")
    finally:
        await close(fetched)
    return bytes(body)


async def close(fetched: Fetched) -> None:
    aclose = getattr(fetched.chunks, "aclose", None)
    if aclose is not None:
        await aclose()
