"""Login to Rackspace identity: ``POST <identity_url>/tokens`` with ``username`` and
``api_key``; the token and the ``cloudFiles`` endpoint of the region from the reply."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import aiohttp

from stowage import errors
from stowage.storage.rackspace.replies import expect
from stowage.storage.settings import RackspaceSettings


@dataclass(frozen=True)
class Login:
    token: str = field(repr=False)
    storage_url: str
    renew_at: float  # time.monotonic() deadline


async def authenticate(session: aiohttp.ClientSession, s: RackspaceSettings) -> Login:
    """Logs in at the identity service: a token and the account's storage URL."""
    body = {"auth": {"RAX-KSKEY:apiKeyCredentials": {"username": s.username, "apiKey": s.api_key}}}
    try:
        async with session.post(
            s.tokens_url, json=body, headers={"Accept": "application/json"}
        ) as resp:
            if resp.status in (401, 403):
                raise errors.StorageAccessDenied("rackspace: login refused (username/api_key)")
            expect(resp, 200, 203)
            doc = await resp.json(content_type=None)
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise errors.StorageUnavailable(f"rackspace identity: {type(exc).__name__}") from exc
    except ValueError as exc:
        raise errors.StorageError("rackspace identity: reply is not JSON") from exc
    return parse_access(doc, s.region, s.internal)


def parse_access(doc: Any, region: str | None, internal: bool) -> Login:
    """Token, account URL and renewal time from an identity ``access`` reply."""
    try:
        access = doc["access"]
        token = str(access["token"]["id"])
        expires = datetime.fromisoformat(access["token"]["expires"].replace("Z", "+00:00"))
        region = region or access.get("user", {}).get("RAX-AUTH:defaultRegion")
        catalog = access["serviceCatalog"]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise errors.StorageError("rackspace identity: unexpected reply") from exc
    lifetime = expires.timestamp() - time.time()
    renew_at = time.monotonic() + lifetime - min(60.0, max(lifetime, 0) / 10)
    return Login(token, _endpoint(catalog, region, internal), renew_at)


def _endpoint(catalog: Any, region: str | None, internal: bool) -> str:
    wanted = "internalURL" if internal else "publicURL"
    for service in catalog:
        if service.get("name") != "cloudFiles" and service.get("type") != "object-store":
            continue
        for endpoint in service.get("endpoints", []):
            same_region = str(endpoint.get("region", "")).upper() == (region or "").upper()
            if region and same_region and endpoint.get(wanted):
                return str(endpoint[wanted]).rstrip("/")
    raise errors.StorageMisconfigured(f"rackspace: no Cloud Files {wanted} for region {region!r}")
