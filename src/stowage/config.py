"""Settings: declared once here with default and help text, built once at start-up.

Sources, later ones winning: defaults, a TOML config file (``--config`` or
``STOWAGE_CONFIG``), environment variables ``STOWAGE_<NAME>``, then CLI options.
``docs/configuration.md`` lists every field; a test keeps the two in step.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from stowage import booleans
from stowage.errors import StowageError

GiB = 1024**3
MiB = 1024**2


def _setting(default: Any, help: str) -> Any:
    if isinstance(default, dict | list):
        return field(
            default_factory=lambda: json.loads(json.dumps(default)), metadata={"help": help}
        )
    return field(default=default, metadata={"help": help})


@dataclass
class Settings:
    host: str = _setting("127.0.0.1", "Address the API and CDN listeners bind to.")
    port: int = _setting(8080, "Port of the API origin (serves /api/...).")
    cdn_port: int = _setting(8081, "Port of the CDN origin (serves /<handle>); 0 disables it.")
    data_dir: Path = _setting(
        Path("data"), "Folder for the SQLite registry and the default local storage."
    )
    api_public_url: str = _setting(
        "",
        "Public API root used in links, e.g. https://files.example.com/api. "
        "Default: http://<host>:<port>/api.",
    )
    cdn_public_url: str = _setting(
        "", "Public CDN root used in links. Default: http://<host>:<cdn_port>."
    )
    cname: str = _setting(
        "",
        "Your domain for the Filestack SDKs' `cname` option (e.g. example.com; a port may "
        "follow): the API port then also answers upload., www., process. and cloud.<cname> "
        "as the API and cdn.<cname> as the CDN, routed by Host; the public URLs default to "
        "https://www.<cname>/api and https://cdn.<cname>. Empty: no host routing.",
    )
    store_link: str = _setting(
        "cdn", "Which link store returns as `url`: `cdn` (CDN link) or `api` (API file link)."
    )
    default_storage: dict[str, Any] = _setting(
        {"type": "local"},
        "Storage behind the `S3` provider for apps without their own S3 bucket "
        "(JSON). Default: local disk under data_dir/storage/<api key>.",
    )
    registry_url: str = _setting(
        "",
        "Where apps and handles live. Empty: SQLite at data_dir/stowage.db (one node). "
        "`postgresql://user:password@host:5432/db`: PostgreSQL, shared by many nodes "
        "(create the schema with `stowage db upgrade`).",
    )
    registry_pool_size: int = _setting(
        10, "PostgreSQL connections per node for queries (as many again for handle locks)."
    )
    pending_grace_seconds: float = _setting(
        6 * 3600.0,
        "PostgreSQL only: a store still pending after this long is taken as abandoned by a "
        "crashed node and cleaned up at start-up. Keep it above your longest upload.",
    )
    shutdown_timeout: float = _setting(
        60.0,
        "On SIGTERM, seconds in-flight requests get to finish (no new connections are "
        "accepted, /readyz answers 503) before they are cut.",
    )
    max_upload_bytes: int = _setting(
        10 * GiB,
        "Largest file accepted by store and overwrite (413 beyond, checked while streaming).",
    )
    body_idle_timeout: float = _setting(
        60.0, "Seconds a request body may stall before the upload is aborted (408)."
    )
    idle_timeout: float = _setting(
        75.0,
        "Seconds a connection may go without a whole request: from connecting (or from "
        "the last response) until its request's headers have all arrived. A client that "
        "sends nothing, or its headers a byte at a time (slowloris), is disconnected; "
        "a request being answered is never cut by it. Keep it above a reverse proxy's "
        "upstream keep-alive timeout (nginx: 60 s), so the proxy closes idle pooled "
        "connections first.",
    )
    rate_limit_app: float = _setting(
        10000.0,
        "Requests per second one API key may make, sustained (429 with Retry-After beyond); "
        "0 disables. Bursts of rate_limit_burst seconds' worth pass.",
    )
    rate_limit_ip: float = _setting(
        10000.0, "Requests per second one client address may make, sustained; 0 disables."
    )
    rate_limit_burst: float = _setting(
        10.0, "Seconds of requests a client may send at once above the sustained rate."
    )
    verify_downloads: bool = _setting(
        False,
        "Re-hash every file against the SHA-256 recorded at write time before serving it "
        "(500 INTEGRITY_ERROR when they differ). Per request: `verify=true`.",
    )
    fetch_max_bytes: int = _setting(2 * GiB, "Largest file fetched from a url (413 beyond).")
    fetch_connect_timeout: float = _setting(10.0, "Connect timeout of url fetches, seconds.")
    fetch_read_timeout: float = _setting(
        30.0, "Seconds a url source may send nothing before the fetch is aborted."
    )
    fetch_total_timeout: float = _setting(900.0, "Upper bound on a whole url fetch, seconds.")
    fetch_max_redirects: int = _setting(5, "Redirects followed by a url fetch.")
    fetch_max_concurrent: int = _setting(16, "Url fetches running at once; more wait.")
    fetch_allow_private: bool = _setting(
        False,
        "Allow url fetches to loopback/private/link-local addresses. Off by default; "
        "only for tests and trusted networks.",
    )
    webhook_max_attempts: int = _setting(
        6, "Attempts per webhook delivery (the first included) before it is marked failed."
    )
    webhook_retry_base_delay: float = _setting(
        30.0,
        "Seconds before the first webhook retry; each further retry waits twice as long "
        "(30 s, 1 min, 2 min, 4 min, 8 min with the defaults).",
    )
    webhook_retry_max_delay: float = _setting(3600.0, "Longest wait between webhook retries.")
    webhook_timeout: float = _setting(
        10.0, "Seconds a webhook receiver has to answer one delivery (connect included)."
    )
    webhook_concurrency: int = _setting(8, "Webhook deliveries in flight at once per node.")
    webhook_poll_interval: float = _setting(
        2.0,
        "Seconds between looks at the delivery queue for work enqueued by other nodes "
        "(this node's events wake the worker at once).",
    )
    webhook_log_retention: float = _setting(
        7 * 86400.0, "Seconds finished webhook deliveries stay in the delivery log."
    )
    webhook_allow_private: bool = _setting(
        False,
        "Allow webhook deliveries to loopback/private/link-local addresses. Off by default "
        "(refused like url fetches); only for tests and trusted networks.",
    )
    upload_expiry_seconds: int = _setting(
        86_400,
        "Seconds after its start an unfinished multipart upload (/multipart/start) is "
        "abandoned: its parts and session are removed by a background sweep.",
    )
    upload_complete_wait: float = _setting(
        25.0,
        "Seconds /multipart/complete waits for the parts to be assembled before answering "
        "202 (the SDKs then ask again); assembly carries on in the background.",
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
        0, "Seconds a policy is still accepted after its expiry (clock skew allowance)."
    )
    exif_max_bytes: int = _setting(
        64 * MiB, "At most this many leading bytes of a file are read to find its EXIF."
    )
    exif_max_pixels: int = _setting(
        100_000_000, "Images with more pixels are refused by the EXIF reader (422)."
    )
    exif_timeout: float = _setting(5.0, "Seconds the EXIF reader may take (422 beyond).")
    processing_max_input_pixels: int = _setting(
        100_000_000,
        "Transformations refuse images with more pixels than this (422 IMAGE_TOO_LARGE), "
        "read from the image header before anything is decoded (decompression bombs).",
    )
    processing_max_input_bytes: int = _setting(
        200 * MiB, "Largest file a transformation reads (413 beyond)."
    )
    processing_max_output_dimension: int = _setting(
        10_000,
        "Largest width or height a transformation may produce (422 IMAGE_TOO_LARGE beyond).",
    )
    processing_max_output_bytes: int = _setting(
        100 * MiB,
        "Largest result a transformation may produce, in bytes (422 IMAGE_TOO_LARGE beyond: "
        "the save stops there, so an oversized result never fills the disk).",
    )
    processing_job_seconds: float = _setting(
        30.0, "Seconds one transformation may run before it is stopped (422 PROCESSING_TIMEOUT)."
    )
    processing_jobs: int = _setting(
        0,
        "Transformations running at once on a node, each in a job process of its own; "
        "0: one per CPU core.",
    )
    processing_job_memory: int = _setting(
        2 * GiB,
        "Address space a job process may use, in bytes (422 IMAGE_TOO_LARGE beyond); 0: no limit.",
    )
    processing_max_frames: int = _setting(
        1000,
        "Most frames a transformation decodes: an animation's (kept as one when the result "
        "is a GIF or WebP), or a GIF's frames up to the page asked for (422 IMAGE_TOO_LARGE "
        "beyond).",
    )
    processing_max_total_pixels: int = _setting(
        200_000_000,
        "Most pixels of all the frames a transformation decodes or makes (frames x width x "
        "height; 422 IMAGE_TOO_LARGE beyond). One frame is held to "
        "processing_max_input_pixels.",
    )
    processing_max_job_cost: float = _setting(
        8.0,
        "Most work a transformation may need, as seconds of one core estimated from the "
        "header and the tasks before it runs (422 PROCESSING_TOO_COSTLY beyond).",
    )
    processing_big_job_cost: float = _setting(
        1.0,
        "Estimated seconds of work beyond which a transformation is a big job: big jobs run "
        "in at most processing_jobs - processing_small_job_slots slots at once.",
    )
    processing_small_job_slots: int = _setting(
        1,
        "Job slots big jobs never take, so that small ones do not wait behind them (with "
        "one job slot, big jobs take it too).",
    )
    processing_max_sources: int = _setting(
        16,
        "Most files one transformation reads (watermark, collage, animate, zip), the main "
        "one included (400 INVALID_PARAMETER beyond).",
    )
    processing_max_sources_bytes: int = _setting(
        200 * MiB,
        "Most bytes of all the files one transformation reads, from their rows before any is "
        "read (413 PAYLOAD_TOO_LARGE beyond).",
    )
    processing_queue: int = _setting(
        16,
        "Transformations that may wait for a free job slot; beyond, 503 PROCESSING_BUSY with "
        "Retry-After (no unbounded queue).",
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
    )
    edge_cache_urls: list[str] = _setting(
        [],
        "Admin URLs of the edge caches (Varnish with deploy/varnish/stowage.vcl) in front of "
        "the CDN origin, comma-separated or a TOML list, e.g. `http://10.0.0.5:80` (the "
        "port varnishd listens on with `-a`, docs/deployment.md). Every "
        "write that changes a handle's CDN answer purges its tag on each before it answers. "
        "Empty (default): no edge cache; CDN responses tell caches not to store them.",
    )
    edge_purge_timeout: float = _setting(
        0.25,
        "Seconds a cache has to acknowledge a purge before the write answers anyway and the "
        "purge is queued in the registry and retried.",
    )
    edge_purge_retry_delay: float = _setting(
        1.0,
        "Seconds before a queued purge is retried (doubling per attempt, at most 60 s); also "
        "how often a node looks at the queue for purges other nodes could not send.",
    )
    edge_ttl: int = _setting(
        86_400,
        "Longest time (seconds) an edge cache keeps a file: a purge lost for good (a cache "
        "unreachable longer than that) heals within it.",
    )
    edge_max_object_bytes: int = _setting(
        32 * MiB,
        "Larger files are streamed through the edge cache without being stored in it.",
    )
    edge_bypass_url: str = _setting(
        "",
        "Public URL of the CDN origin itself, e.g. `https://origin.example.com`. When set, "
        "a file larger than edge_max_object_bytes asked through an edge cache is answered "
        "`307` to this URL (same path and query), so its bytes skip the cache. Empty "
        "(default): such files are piped through the cache.",
    )
    workers: int = _setting(
        1,
        "Worker processes serving the API and CDN ports (SO_REUSEPORT); 0: one per CPU core. "
        "Start-up recovery runs once, in the parent, before any worker accepts a request.",
    )
    access_log: bool = _setting(True, "Write an access log line per request (no query strings).")
    log_level: str = _setting("INFO", "Log level: DEBUG, INFO, WARNING, ERROR.")
    log_format: str = _setting(
        "text",
        "Log lines as `text` or `json` (one object per line with `request_id`; the access "
        "log adds method, path without query, status and duration_ms).",
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


def setting_fields() -> list[dataclasses.Field[Any]]:
    return list(fields(Settings))


def load_settings(config_file: Path | None = None, **overrides: Any) -> Settings:
    values: dict[str, Any] = {}
    config_file = config_file or _env_path("STOWAGE_CONFIG")
    if config_file is not None:
        with open(config_file, "rb") as handle:
            values.update(tomllib.load(handle))
    for f in fields(Settings):
        env = os.environ.get(f"STOWAGE_{f.name.upper()}")
        if env is not None:
            values[f.name] = env
    values.update({k: v for k, v in overrides.items() if v is not None})
    unknown = set(values) - {f.name for f in fields(Settings)}
    if unknown:
        raise ValueError(f"unknown settings: {', '.join(sorted(unknown))}")
    return Settings(**{name: _coerce(name, value) for name, value in values.items()})


def _coerce(name: str, value: Any) -> Any:
    kind = type(getattr(Settings(), name))
    if kind is bool and isinstance(value, str):
        try:
            return booleans.parse(value, name)
        except StowageError as exc:
            raise ValueError(exc.message) from exc
    if kind is dict and isinstance(value, str):
        return json.loads(value)
    if kind is list and isinstance(value, str):  # comma-separated in the environment
        return [item.strip() for item in value.split(",") if item.strip()]
    if issubclass(kind, Path):
        return Path(value)
    return kind(value)


def _env_path(name: str) -> Path | None:
    value = os.environ.get(name)
    return Path(value) if value else None
