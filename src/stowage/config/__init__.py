"""Settings: declared once here with default and help text, built once at start-up.

Sources, later ones winning: defaults, a TOML config file (``--config`` or
``STOWAGE_CONFIG``), environment variables ``STOWAGE_<NAME>``, then CLI options.
``docs/configuration.md`` lists every field; a test keeps the two in step.
"""

from __future__ import annotations

import dataclasses
import os
import re
import typing
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from stowage.config.base import GiB, MiB
from stowage.config.base import setting as _setting
from stowage.config.delivery import DeliverySettings
from stowage.config.office import OfficeSettings
from stowage.config.processing import ProcessingSettings
from stowage.config.screenshots import ScreenshotSettings
from stowage.config.video import VideoSettings
from stowage.values import coerce
from stowage.values import fields as value_fields
from stowage.values.storage import LocalSettings, ProviderSettings


@dataclass
class Settings(
    ProcessingSettings, VideoSettings, OfficeSettings, ScreenshotSettings, DeliverySettings
):
    """Every setting: the general ones here, the capabilities' in their own modules
    (``config/processing.py``, ``config/video.py``, ``config/office.py``,
    ``config/screenshots.py``,
    ``config/delivery.py``); one flat
    set of names."""

    host: str = _setting("127.0.0.1", "Address the API and CDN listeners bind to.")
    port: int = _setting(
        8080, "Port of the API origin (serves /api/...).", form=coerce.integer(0, 65535)
    )
    cdn_port: int = _setting(
        8081,
        "Port of the CDN origin (serves /<handle>); 0 disables it.",
        form=coerce.integer(0, 65535),
    )
    data_dir: Path = _setting(
        Path("data"),
        "Folder for the SQLite registry and the default local storage; a relative one is "
        "taken from the folder Stowage starts in, and `~` is the user's home.",
    )
    api_public_url: str = _setting(
        "",
        "Public API root used in links, e.g. https://files.example.com/api. "
        "Default: http://<host>:<port>/api.",
        form=coerce.url(),
    )
    cdn_public_url: str = _setting(
        "", "Public CDN root used in links. Default: http://<host>:<cdn_port>.", form=coerce.url()
    )
    cname: str = _setting(
        "",
        "Your domain for the Filestack SDKs' `cname` option (e.g. example.com; a port may "
        "follow): the API port then also answers upload., www., process. and cloud.<cname> "
        "as the API, cdn.<cname> as the CDN and static.<cname> with the picker module, "
        "routed by Host; the public URLs default to https://www.<cname>/api and "
        "https://cdn.<cname>. Empty: no host routing.",
    )
    store_link: str = _setting(
        "cdn",
        "Which link store returns as `url`: `cdn` (CDN link) or `api` (API file link).",
        form=coerce.choice("cdn", "api"),
    )
    default_storage: ProviderSettings = _setting(
        LocalSettings(),
        "Storage behind the `S3` provider for apps without their own S3 bucket: a table "
        "with its `type` and that provider's keys (JSON in the environment). Default: local "
        "disk under data_dir/storage/<api key>.",
    )
    registry_url: str = _setting(
        "",
        "Where apps and handles live. Empty: SQLite at data_dir/stowage.db (one node). "
        "`postgresql://user:password@host:5432/db`: PostgreSQL, shared by many nodes "
        "(create the schema with `stowage db upgrade`).",
        form=coerce.url("postgresql", "postgres"),
    )
    registry_pool_size: int = _setting(
        10,
        "PostgreSQL connections per node for queries (as many again for handle locks).",
        form=coerce.integer(1),
    )
    pending_grace_seconds: float = _setting(
        6 * 3600.0,
        "PostgreSQL only: a store still pending after this long is taken as abandoned by a "
        "crashed node and cleaned up at start-up. Keep it above your longest upload.",
        form=coerce.duration(),
    )
    shutdown_timeout: float = _setting(
        60.0,
        "On SIGTERM, seconds in-flight requests get to finish (no new connections are "
        "accepted, /readyz answers 503) before they are cut.",
        form=coerce.duration(),
    )
    max_upload_bytes: int = _setting(
        10 * GiB,
        "Largest file accepted by store and overwrite (413 beyond, checked while streaming).",
        form=coerce.size(1),
    )
    body_idle_timeout: float = _setting(
        60.0,
        "Seconds a request body may stall before the upload is aborted (408).",
        form=coerce.duration(),
    )
    idle_timeout: float = _setting(
        75.0,
        "Seconds a connection may go without a whole request: from connecting (or from "
        "the last response) until its request's headers have all arrived. A client that "
        "sends nothing, or its headers a byte at a time (slowloris), is disconnected; "
        "a request being answered is never cut by it. Keep it above a reverse proxy's "
        "upstream keep-alive timeout (nginx: 60 s), so the proxy closes idle pooled "
        "connections first.",
        form=coerce.duration(),
    )
    rate_limit_app: float = _setting(
        10000.0,
        "Requests per second one API key may make, sustained (429 with Retry-After beyond); "
        "0 disables. Bursts of rate_limit_burst seconds' worth pass.",
        form=coerce.number(0),
    )
    rate_limit_ip: float = _setting(
        10000.0,
        "Requests per second one client address may make, sustained; 0 disables.",
        form=coerce.number(0),
    )
    rate_limit_burst: float = _setting(
        10.0,
        "Seconds of requests a client may send at once above the sustained rate.",
        form=coerce.number(0),
    )
    verify_downloads: bool = _setting(
        False,
        "Re-hash every file against the SHA-256 recorded at write time before serving it "
        "(500 INTEGRITY_ERROR when they differ). Per request: `verify=true`.",
    )
    upload_expiry_seconds: int = _setting(
        86_400,
        "Seconds after its start an unfinished multipart upload (/multipart/start) is "
        "abandoned: its parts and session are removed by a background sweep.",
        form=coerce.duration(whole=True),
    )
    upload_complete_wait: float = _setting(
        25.0,
        "Seconds /multipart/complete waits for the parts to be assembled before answering "
        "202 (the SDKs then ask again); assembly carries on in the background.",
        form=coerce.duration(),
    )
    upload_parts_dir: str = _setting(
        "",
        "Folder where multipart upload parts wait until completion. Empty (default): "
        "in the default storage under `.stowage-uploads/` when it is a shared store (S3, "
        "GCS, Azure, Swift), so any node takes and completes any part; data_dir/uploads "
        "when it is local disk. Setting a folder keeps parts there (one node, or a "
        "filesystem all nodes mount).",
    )
    policy_clock_skew: int = _setting(
        0,
        "Seconds a policy is still accepted after its expiry (clock skew allowance).",
        form=coerce.duration(whole=True),
    )
    exif_max_bytes: int = _setting(
        64 * MiB,
        "At most this many leading bytes of a file are read to find its EXIF.",
        form=coerce.size(1),
    )
    exif_max_pixels: int = _setting(
        100_000_000,
        "Images with more pixels are refused by the EXIF reader (422).",
        form=coerce.integer(1),
    )
    exif_timeout: float = _setting(
        5.0, "Seconds the EXIF reader may take (422 beyond).", form=coerce.duration()
    )
    cors_origins: str = _setting(
        "*",
        "Origins allowed to call the API from a browser (comma-separated; `*` any; empty: "
        "no CORS). Auth never uses cookies, so `*` grants nothing beyond the credentials sent.",
    )
    metrics_allow: str = _setting(
        "127.0.0.1, ::1",
        "Clients that may read GET /metrics on the API port: comma-separated addresses or "
        "networks (`10.0.0.0/8`); any other client gets 404; empty: nobody. The shipped "
        "nginx configs never forward /metrics (through a proxy on the node, a client would "
        "come from 127.0.0.1).",
        form=coerce.networks(),
    )
    inline_active_types: bool = _setting(
        False,
        "Serve HTML, SVG, XML and JavaScript inline. Off: they are always sent as attachments.",
    )
    cdn_max_age: int = _setting(
        0,
        "Cache-Control max-age browsers get for CDN responses of apps without security. "
        "0 (default): `public, no-cache`, revalidated by ETag on each use, since an "
        "overwrite keeps the URL and a browser cannot be purged.",
        form=coerce.duration(whole=True),
    )
    workers: int = _setting(
        1,
        "Worker processes serving the API and CDN ports (SO_REUSEPORT); 0: one per CPU core. "
        "Start-up recovery runs once, in the parent, before any worker accepts a request.",
        form=coerce.integer(0),
    )
    access_log: bool = _setting(True, "Write an access log line per request (no query strings).")
    log_level: str = _setting(
        "INFO",
        "Log level: DEBUG, INFO, WARNING, ERROR.",
        form=coerce.choice("DEBUG", "INFO", "WARNING", "ERROR"),
    )
    log_format: str = _setting(
        "text",
        "Log lines as `text` or `json` (one object per line with `request_id`; the access "
        "log adds method, path without query, status and duration_ms).",
        form=coerce.choice("text", "json"),
    )

    @property
    def registry_path(self) -> Path:
        return self.data_dir / "stowage.db"

    @property
    def upload_parts_path(self) -> Path:
        return Path(self.upload_parts_dir) if self.upload_parts_dir else self.data_dir / "uploads"

    @property
    def registry_shared(self) -> bool:
        """True when several nodes may share the registry (PostgreSQL)."""
        return self.registry_url.startswith(("postgresql://", "postgres://"))

    def api_url(self) -> str:
        default = f"https://www.{self.cname}/api" if self.cname else ""
        root = self.api_public_url or default or f"http://{self.host}:{self.port}/api"
        return root.rstrip("/")

    def cdn_url(self) -> str:
        default = f"https://cdn.{self.cname}" if self.cname else ""
        return (self.cdn_public_url or default or f"http://{self.host}:{self.cdn_port}").rstrip("/")

    def cname_domain(self) -> str:
        """``cname`` without a port (the SDKs keep the port in the hosts they build)."""
        return self.cname.strip().rstrip(".").lower().partition(":")[0]

    def __post_init__(self) -> None:
        # Every value through the coercion engine, however the settings were made: a bad
        # one is refused here, at start-up, naming the setting and the form it takes.
        for f in fields(self):
            setattr(self, f.name, value_fields.checked(f, _HINTS[f.name], getattr(self, f.name)))
        if self.cname and not _CNAME.fullmatch(self.cname):
            raise coerce.Invalid("cname", "a domain name, optionally :port", self.cname)


#: What the SDKs can put after ``upload.``: DNS labels, then an optional port.
_LABEL = r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)"
_CNAME = re.compile(rf"{_LABEL}(\.{_LABEL})+(:[0-9]{{1,5}})?")


def setting_fields() -> list[dataclasses.Field[Any]]:
    return list(fields(Settings))


#: Capability groups: in a TOML file, a table ``[processing]`` holds the ``processing_*``
#: settings without their prefix (``job_seconds = 10``); the flat names work as well.
GROUPS: dict[str, str] = {
    "registry": "registry_",
    "rate_limit": "rate_limit_",
    "fetch": "fetch_",
    "webhooks": "webhook_",
    "uploads": "upload_",
    "exif": "exif_",
    "processing": "processing_",
    "video": "video_",
    "edge": "edge_",
    "log": "log_",
}


def load_settings(config_file: Path | None = None, **overrides: Any) -> Settings:
    """Settings from every source, each value checked (``Invalid`` names the first bad one)."""
    config_file = config_file or _env_path("STOWAGE_CONFIG")
    return value_fields.load(Settings, config_file, overrides, GROUPS, "STOWAGE_")


def group_of(name: str) -> str:
    """The capability group of a setting, "" for the service's general ones."""
    return next((g for g, prefix in GROUPS.items() if name.startswith(prefix)), "")


def form_of(f: dataclasses.Field[Any]) -> coerce.Form | None:
    return value_fields.form_of(f, _HINTS[f.name])


def _env_path(name: str) -> Path | None:
    value = os.environ.get(name)
    return Path(value) if value else None


_HINTS = typing.get_type_hints(Settings)
