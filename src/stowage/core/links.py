"""The public URLs of a stored file: its CDN or API link (``store_link``)."""

from __future__ import annotations

from stowage.config import Settings
from stowage.registry.base import FileRecord


class Links:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def file_url(self, record: FileRecord) -> str:
        """The link answers and webhooks carry: the CDN's, unless ``store_link`` is api."""
        if self.settings.store_link == "api":
            return self.api_file_url(record.handle)
        return f"{self.settings.cdn_url()}/{record.handle}"

    def api_file_url(self, handle: str) -> str:
        return f"{self.settings.api_url()}/file/{handle}"

    def process_url(self, path_qs: str = "") -> str:
        """The API origin's process address (the CDN origin sends writes there)."""
        return f"{self.settings.api_url().removesuffix('/api')}/process{path_qs}"
