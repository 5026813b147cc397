"""Listing an app's files, a page at a time. Listing is sensitive: it always needs
a ``read`` or ``stat`` grant (without a handle restriction) or the app secret."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from stowage import errors
from stowage.core import names
from stowage.core.providers import Providers
from stowage.core.security import Credentials, Target, authorize
from stowage.registry.base import App, FileRecord, FileRows
from stowage.storage import API_PROVIDERS

MAX_LIMIT = 1000
DEFAULT_LIMIT = 100
_DIGITS = re.compile("[0-9]{1,12}")


@dataclass(frozen=True)
class Page:
    files: list[FileRecord]
    next: str | None
    providers: list[str]  # the store paths' provider names this app can use (the console's)

    def public(self) -> dict[str, Any]:
        files = [entry(r) for r in self.files]
        return {"files": files, "next": self.next, "providers": self.providers}


def app_providers(app: App) -> list[str]:
    """``S3`` (the service's default storage, always there) and the app's own providers,
    in the order and spelling of the store path (``/api/store/<provider>``)."""
    return [name for name in API_PROVIDERS if name == "S3" or name in app.storage]


def entry(record: FileRecord) -> dict[str, Any]:
    return {
        "handle": record.handle,
        "filename": record.filename,
        "size": record.size,
        "mimetype": record.mimetype,
        "uploaded": record.uploaded,
        "location": record.location,
        "provider": record.provider,
        "container": record.container,
        "key": record.key,
    }


def parse_limit(value: str | None) -> int:
    if value is None or value == "":
        return DEFAULT_LIMIT
    # ASCII digits only: isdigit() and int() take any script's ("\u0661", "\u00b2")
    if not _DIGITS.fullmatch(value) or not 1 <= int(value) <= MAX_LIMIT:
        raise errors.InvalidParameter(
            f"limit must be an integer from 1 to {MAX_LIMIT}", parameter="limit"
        )
    return int(value)


async def list_files(
    files: FileRows,
    providers: Providers,
    api_key: str | None,
    creds: Credentials,
    after: str | None,
    limit: int,
) -> Page:
    app = await providers.app(api_key)
    authorize(
        app.secret,
        creds,
        ("read", "stat"),
        Target(),
        required=True,
        now=time.time(),
        skew=providers.settings.policy_clock_skew,
    )
    if after and not names.is_handle(after):
        raise errors.InvalidParameter("after must be a handle", parameter="after")
    # One extra row tells whether there is a next page without a second query.
    rows = await files.list_files(app.api_key, after=after or None, limit=limit + 1)
    page = rows[:limit]
    return Page(page, page[-1].handle if len(rows) > limit else None, app_providers(app))
