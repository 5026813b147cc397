"""Settings of what the service sends and fetches: URL fetches (``fetch_*``), webhook
deliveries (``webhook_*``) and the edge cache tier (``edge_*``)."""

from __future__ import annotations

from dataclasses import dataclass

from stowage import __version__
from stowage.config.base import GiB, MiB
from stowage.config.base import setting as _setting
from stowage.values import coerce


@dataclass
class DeliverySettings:
    fetch_max_bytes: int = _setting(
        2 * GiB, "Largest file fetched from a url (413 beyond).", form=coerce.size(1)
    )
    fetch_connect_timeout: float = _setting(
        10.0,
        "Seconds a url fetch has to resolve the name, connect and send its request "
        "(each redirect anew).",
        form=coerce.duration(),
    )
    fetch_read_timeout: float = _setting(
        30.0,
        "Seconds a url source may send nothing before the fetch is aborted (504); also "
        "the bound on its answer's status line and headers from the request sent, interim "
        "1xx answers included (headers trickled a byte at a time end there too).",
        form=coerce.duration(),
    )
    fetch_total_timeout: float = _setting(
        900.0, "Upper bound on a whole url fetch, seconds.", form=coerce.duration()
    )
    fetch_max_redirects: int = _setting(
        5, "Redirects followed by a url fetch.", form=coerce.integer(0)
    )
    fetch_max_concurrent: int = _setting(
        16,
        "Url fetches running at once; more wait (``fetch_slot_wait`` at most).",
        form=coerce.integer(1),
    )
    fetch_slot_wait: float = _setting(
        5.0,
        "Seconds a url fetch may wait for one of the ``fetch_max_concurrent`` slots; "
        "beyond, 503 FETCH_BUSY with Retry-After (these seconds, rounded up).",
        form=coerce.duration(),
    )
    fetch_background_slot_wait: float = _setting(
        120.0,
        "Seconds a url fetch of a background job (a video conversion's ``watermark_url``) "
        "may wait for a fetch slot; beyond, the job fails (FETCH_BUSY). No client waits on "
        "it, so it waits longer than ``fetch_slot_wait`` rather than fail while the slots "
        "are busy.",
        form=coerce.duration(),
    )
    fetch_app_max_concurrent: int = _setting(
        8,
        "Url fetch slots one app's fetches may hold at once (at most "
        "``fetch_max_concurrent``; the default is half of its default): another app's "
        "fetch still finds one free. An app past it waits for one of its own, "
        "``fetch_slot_wait`` at most.",
        form=coerce.integer(1),
    )
    fetch_min_rate: int = _setting(
        1024,
        "Bytes a second a url source's body must average over each ``fetch_read_timeout`` "
        "seconds (30 s if that is 0); a slower one, such as a byte every few seconds, is "
        "cut (504) instead of holding a fetch slot for ``fetch_total_timeout``. 0: none.",
        form=coerce.size(0),
    )
    fetch_user_agent: str = _setting(
        f"Stowage/{__version__} (+url-fetch)",
        "The ``User-Agent`` of every url fetch (sources, stores from a url, imports): "
        "some origins refuse a client library's default. Sent to any origin a url names: "
        "it must hold no secret.",
        form=coerce.header(256),
    )
    fetch_allow_private: bool = _setting(
        False,
        "Allow url fetches to loopback/private/link-local addresses. Off by default; "
        "only for tests and trusted networks.",
    )
    webhook_max_attempts: int = _setting(
        6,
        "Attempts per webhook delivery (the first included) before it is marked failed.",
        form=coerce.integer(1),
    )
    webhook_retry_base_delay: float = _setting(
        30.0,
        "Seconds before the first webhook retry; each further retry waits twice as long "
        "(30 s, 1 min, 2 min, 4 min, 8 min with the defaults).",
        form=coerce.duration(),
    )
    webhook_retry_max_delay: float = _setting(
        3600.0, "Longest wait between webhook retries.", form=coerce.duration()
    )
    webhook_timeout: float = _setting(
        10.0,
        "Seconds a webhook receiver has to answer one delivery (connect included).",
        form=coerce.duration(),
    )
    webhook_concurrency: int = _setting(
        8, "Webhook deliveries in flight at once per node.", form=coerce.integer(1)
    )
    webhook_poll_interval: float = _setting(
        2.0,
        "Seconds between looks at the delivery queue for work enqueued by other nodes "
        "(this node's events wake the worker at once).",
        form=coerce.duration(),
    )
    webhook_log_retention: float = _setting(
        7 * 86400.0,
        "Seconds finished webhook deliveries stay in the delivery log.",
        form=coerce.duration(),
    )
    webhook_allow_private: bool = _setting(
        False,
        "Allow webhook deliveries to loopback/private/link-local addresses. Off by default "
        "(refused like url fetches); only for tests and trusted networks.",
    )
    edge_cache_urls: list[str] = _setting(
        [],
        "Admin URLs of the edge caches (Varnish with deploy/varnish/stowage.vcl) in front of "
        "the CDN origin, comma-separated or a TOML list, e.g. `http://10.0.0.5:80` (the "
        "port varnishd listens on with `-a`, docs/deployment.md). Every "
        "write that changes a handle's CDN answer purges its tag on each before it answers. "
        "Empty (default): no edge cache; CDN responses tell caches not to store them.",
        form=coerce.urls(),
    )
    edge_purge_timeout: float = _setting(
        0.25,
        "Seconds a cache has to acknowledge a purge before the write answers anyway and the "
        "purge is queued in the registry and retried.",
        form=coerce.duration(),
    )
    edge_purge_retry_delay: float = _setting(
        1.0,
        "Seconds before a queued purge is retried (doubling per attempt, at most 60 s); also "
        "how often a node looks at the queue for purges other nodes could not send.",
        form=coerce.duration(),
    )
    edge_ttl: int = _setting(
        86_400,
        "Longest time (seconds) an edge cache keeps a file: a purge lost for good (a cache "
        "unreachable longer than that) heals within it.",
        form=coerce.duration(whole=True),
    )
    edge_max_object_bytes: int = _setting(
        32 * MiB,
        "Larger files are streamed through the edge cache without being stored in it.",
        form=coerce.size(0),
    )
    edge_bypass_url: str = _setting(
        "",
        "Public URL of the CDN origin itself, e.g. `https://origin.example.com`. When set, "
        "a file larger than edge_max_object_bytes asked through an edge cache is answered "
        "`307` to this URL (same path and query), so its bytes skip the cache. Empty "
        "(default): such files are piped through the cache.",
        form=coerce.url(),
    )
