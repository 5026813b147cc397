"""The registry: apps and the handle -> stored object table.

It holds all cross-request state so that a node holds none (SQLite now,
PostgreSQL later). Contract (``tests/registry/test_contract.py``):

- ``reserve`` inserts a *pending* file row; it raises ``KeyInUse`` when a live
  or pending row of the same app already claims ``(provider, container, key)``.
  Pending rows are invisible to ``get``.
- ``commit`` turns a pending row into a stored one with its final size, hash
  and type. ``abandon`` drops a pending row.
- ``update`` rewrites a stored row after an overwrite; False when it is gone. In the same
  transaction it drops the handle's overwrite intent up to the record's version.
- ``delete`` removes a stored row; True exactly once per handle, however many
  callers race.
- ``handle_lock`` serialises overwrite and delete of one handle (across nodes when the
  registry is shared).
- ``intend_overwrite`` records (or replaces) the handle's ``OverwriteIntent``, only while
  its stored row is at ``intent.version - 1``: False when the row is gone or another
  overwrite moved it on. ``overwrite_intents`` lists the intents recorded before a time.
  ``settle_overwrite`` drops an intent if it is still there unchanged and, with ``adopt``,
  applies it to the row in the same transaction, only while the row is still at
  ``version - 1``; True when the row was changed. ``pending_overwrite`` is the handle's
  intent, None without one (readers: ``core/reading.py``).
- ``ping`` answers readiness: the store answers and its schema is the current one.

Webhook deliveries (``WebhookDelivery``; contract in ``tests/registry/test_webhooks.py``)
and edge purges (``EdgePurge``) are lease-based queues (``queue.py``, declared in
``queues.py``); each backend implements the queue once:

- ``enqueue_webhooks`` inserts rows (status ``pending``) and returns them with their ids.
- ``claim_webhooks`` atomically takes up to ``limit`` rows that are ``pending`` and due
  (``next_attempt <= now``) or ``delivering`` with an expired lease, marks them
  ``delivering`` for ``worker`` until ``now + lease`` and counts the attempt. Two workers
  never hold the same row (PostgreSQL: ``FOR UPDATE SKIP LOCKED``).
- ``finish_webhook`` records an attempt's outcome; only the worker holding the claim
  can, and only once (False otherwise, e.g. after its lease was taken over).
- ``webhook_log`` lists deliveries newest first; ``prune_webhooks`` drops finished
  (``delivered``/``failed``) rows last updated before a time.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from dataclasses import astuple, dataclass, field, replace
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class App:
    api_key: str
    secret: str
    name: str = ""
    security: bool = False
    #: API provider name ("S3", "gcs", ...) -> provider config (``{"type": "s3", ...}``).
    storage: dict[str, dict[str, Any]] = field(default_factory=dict)
    webhooks: list[str] = field(default_factory=list)
    created: float = field(default_factory=time.time)

    def public(self) -> dict[str, Any]:
        """What may be shown: never the secret, never provider credentials."""
        return {
            "api_key": self.api_key,
            "name": self.name,
            "security": self.security,
            "providers": sorted(self.storage),
            "webhooks": list(self.webhooks),
            "created": self.created,
        }


@dataclass(frozen=True)
class FileRecord:
    handle: str
    api_key: str
    provider: str  # API provider name used to store it ("S3", "gcs", ...)
    location: str  # where the bytes really are ("local", "S3", ...)
    container: str
    key: str
    filename: str
    mimetype: str
    size: int = 0
    sha256: str = ""
    uploaded: float = 0.0  # epoch milliseconds
    source_url: str | None = None
    cloud: bool = False  # a link to an object the service did not write (deletion rule 1)
    access: str = "private"
    version: int = 1

    def with_(self, **changes: Any) -> FileRecord:
        return replace(self, **changes)

    def values(self) -> tuple[Any, ...]:
        """The fields in declaration order: the column order of the registries' files table."""
        return astuple(self)


@dataclass(frozen=True)
class VideoJob:
    """A video or audio conversion (``video_convert``): one per source version and chain."""

    id: int  # assigned by ``put``; 0 before
    key: str  # digest of (handle, version, normalised chain): the same conversion is one job
    uuid: str  # what the status answer names it
    handle: str  # the source file
    api_key: str
    version: int  # the source's row version when asked
    chain: str  # the normalised ``video_convert`` task (``Task.key()``)
    result: str | None = None  # JSON: the stored result's handle and metadata, once done
    status: str = "pending"  # pending, started (leased), completed, failed
    attempts: int = 0
    last_error: str = ""
    created: float = field(default_factory=time.time)
    updated: float = 0.0
    progress: float | None = None  # percent done of the running attempt, from ffmpeg


VIDEO_PENDING, VIDEO_STARTED, VIDEO_COMPLETED, VIDEO_FAILED = (
    "pending",
    "started",
    "completed",
    "failed",
)


@dataclass(frozen=True)
class OverwriteIntent:
    """What an overwrite will write into a file's row, recorded once the new body has ended
    and before the provider commits it (``core/overwrites.py``). The row update drops it;
    one still there after a crash is settled from what storage holds."""

    handle: str
    version: int  # the row's version after the overwrite: it is at ``version - 1`` before
    size: int
    sha256: str
    mimetype: str
    created: float = field(default_factory=time.time)  # epoch seconds


#: Webhook delivery states.
WEBHOOK_PENDING, WEBHOOK_DELIVERING = "pending", "delivering"
WEBHOOK_DELIVERED, WEBHOOK_FAILED = "delivered", "failed"


@dataclass(frozen=True)
class WebhookDelivery:
    """One event body to POST to one webhook URL, and how that went."""

    id: int  # assigned by ``enqueue_webhooks``; 0 before
    event_id: int  # the body's ``id``: shared by the deliveries of one event
    api_key: str
    url: str
    action: str
    handle: str
    body: str  # the exact JSON text that is signed and sent
    status: str = WEBHOOK_PENDING
    attempts: int = 0
    next_attempt: float = 0.0  # epoch seconds
    lease_until: float = 0.0
    response_code: int | None = None  # of the last attempt that got an answer
    last_error: str = ""
    created: float = field(default_factory=time.time)
    updated: float = 0.0

    def public(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "event_id": self.event_id,
            "api_key": self.api_key,
            "url": self.url,
            "action": self.action,
            "handle": self.handle,
            "status": self.status,
            "attempts": self.attempts,
            "next_attempt": self.next_attempt,
            "response_code": self.response_code,
            "last_error": self.last_error,
            "created": self.created,
            "updated": self.updated,
        }


@dataclass(frozen=True)
class UploadSession:
    """A multipart upload (``/multipart/start``) until it completes or expires."""

    upload_id: str
    api_key: str
    provider: str  # API provider name ("S3", "gcs", ...)
    filename: str
    mimetype: str
    size: int  # announced at start; the parts must add up to it
    path: str | None
    container: str | None
    access: str
    part_key: str  # per-upload secret that signs its part URLs
    created: float  # epoch seconds
    state: str = "open"  # "open", then "complete" once its file is stored
    handle: str | None = None  # the stored file, once complete


@dataclass(frozen=True)
class UploadPart:
    """One received piece of an upload: a whole part, or a chunk of it at ``offset``."""

    upload_id: str
    part: int  # 1-based
    offset: int
    size: int
    md5: str  # hex
    etag: str  # what the part PUT answered (hex md5)


class AppRows(Protocol):
    async def create_app(self, app: App) -> None: ...
    async def get_app(self, api_key: str) -> App | None: ...
    async def list_apps(self) -> list[App]: ...
    async def update_app(self, app: App) -> None: ...
    async def delete_app(self, api_key: str) -> bool: ...


class FileRows(Protocol):
    async def reserve(self, record: FileRecord) -> None: ...
    async def commit(self, record: FileRecord) -> None: ...
    async def abandon(self, handle: str) -> None: ...
    async def get(self, handle: str) -> FileRecord | None: ...
    async def update(self, record: FileRecord) -> bool: ...
    async def delete(self, handle: str) -> bool: ...
    async def list_files(
        self, api_key: str, after: str | None = None, limit: int = 100
    ) -> list[FileRecord]: ...
    async def pending(self, older_than: float) -> list[FileRecord]: ...
    def all_files(self) -> AsyncIterator[FileRecord]: ...


class IntentRows(Protocol):
    async def intend_overwrite(self, intent: OverwriteIntent) -> bool: ...
    async def overwrite_intents(self, older_than: float) -> list[OverwriteIntent]: ...
    async def settle_overwrite(self, intent: OverwriteIntent, adopt: bool) -> bool: ...
    async def pending_overwrite(self, handle: str) -> OverwriteIntent | None: ...


class Locks(Protocol):
    def handle_lock(self, handle: str) -> AbstractAsyncContextManager[None]: ...
    def exclusive(self, job: str) -> AbstractAsyncContextManager[bool]:
        """Yields True to the one caller (across processes and nodes) that may run ``job``
        now, False to the others; never waits."""
        ...


class UploadRows(Protocol):
    # Multipart uploads: ``put_upload_part`` inserts or replaces the piece at
    # ``(upload_id, part, offset)``; ``upload_parts`` lists them by part then offset;
    # ``finish_upload`` turns an open session complete with its handle and drops its
    # pieces (False when it was not open); ``delete_upload`` drops session and pieces;
    # ``expired_uploads`` lists sessions created before a time, whatever their state.
    async def create_upload(self, session: UploadSession) -> None: ...
    async def get_upload(self, upload_id: str) -> UploadSession | None: ...
    async def put_upload_part(self, part: UploadPart) -> None: ...
    async def upload_parts(self, upload_id: str) -> list[UploadPart]: ...
    async def finish_upload(self, upload_id: str, handle: str) -> bool: ...
    async def delete_upload(self, upload_id: str) -> None: ...
    async def expired_uploads(self, created_before: float) -> list[UploadSession]: ...


class WebhookRows(Protocol):
    async def enqueue_webhooks(
        self, deliveries: list[WebhookDelivery]
    ) -> list[WebhookDelivery]: ...
    async def claim_webhooks(
        self, worker: str, now: float, lease: float, limit: int
    ) -> list[WebhookDelivery]: ...
    async def finish_webhook(
        self,
        delivery_id: int,
        worker: str,
        status: str,
        *,
        now: float,
        next_attempt: float = 0.0,
        response_code: int | None = None,
        error: str = "",
    ) -> bool: ...
    async def webhook_log(
        self, api_key: str | None = None, limit: int = 50
    ) -> list[WebhookDelivery]: ...
    async def prune_webhooks(self, before: float) -> int: ...
    async def webhook_queue_depth(self) -> int:
        """Deliveries waiting or being delivered (the ``/metrics`` gauge)."""
        ...


@dataclass(frozen=True)
class EdgePurge:
    """A tag purge one edge cache did not acknowledge, waiting to be sent again."""

    id: int  # assigned by ``enqueue_purges``; 0 before
    cache: str  # the cache's admin URL
    tag: str
    attempts: int = 0
    next_attempt: float = 0.0  # epoch seconds
    lease_until: float = 0.0
    last_error: str = ""
    created: float = field(default_factory=time.time)


class PurgeQueue(Protocol):
    """Durable edge purges (``edge/``; contract in ``tests/registry/test_purges.py``).

    ``enqueue_purges`` inserts rows (one per cache and tag; a row already waiting for the
    same cache and tag is kept instead). ``claim_purges`` takes up to ``limit`` due rows
    (``next_attempt <= now``, or claimed with an expired lease) for ``worker`` until
    ``now + lease`` and counts the attempt; two workers never hold the same row.
    ``finish_purge`` deletes the row when ``done``, else makes it due at ``next_attempt``;
    only the claiming worker can (False otherwise). ``purge_queue_depth`` counts rows.
    """

    async def enqueue_purges(self, purges: list[EdgePurge]) -> None: ...
    async def claim_purges(
        self, worker: str, now: float, lease: float, limit: int
    ) -> list[EdgePurge]: ...
    async def finish_purge(
        self, purge_id: int, worker: str, *, done: bool, next_attempt: float, error: str = ""
    ) -> bool: ...
    async def purge_queue_depth(self) -> int: ...


# What a consumer that needs several concerns takes (the registry object satisfies each).
class OverwriteRows(FileRows, IntentRows, Locks, Protocol):
    """Overwrites and their settling (``core/overwrites.py``, integrity)."""


class RecoveryRows(AppRows, OverwriteRows, Protocol):
    """Start-up recovery: abandoned stores of apps, unsettled overwrites."""


class UploadStore(UploadRows, FileRows, Locks, Protocol):
    """Multipart uploads: sessions, the file they become, the sweep's exclusive job."""


class WebhookStore(WebhookRows, AppRows, Protocol):
    """The delivery worker: the queue and the app whose secret signs a delivery."""


class VideoJobRows(Protocol):
    """Video conversions (``registry/queues.py`` ``VideoJobs``; contract in
    ``tests/registry/test_video_jobs.py``). ``ask_video`` queues a job unless one with its
    key exists (any state, any node) and returns the one that holds the key."""

    async def ask_video(self, job: VideoJob) -> VideoJob: ...
    async def video_job(self, key: str) -> VideoJob | None: ...
    async def claim_videos(
        self, worker: str, now: float, lease: float, limit: int
    ) -> list[VideoJob]: ...
    async def renew_video(self, job_id: int, worker: str, *, now: float, lease: float) -> bool: ...
    async def finish_video(
        self,
        job_id: int,
        worker: str,
        *,
        now: float,
        result: str = "",
        error: str = "",
        retry_at: float | None = None,
    ) -> bool: ...
    async def forget_videos(self, handle: str) -> list[VideoJob]: ...
    async def video_progress(self, job_id: int, worker: str, percent: float) -> bool:
        """The running job's progress; False once it is no longer ``worker``'s."""
        ...

    async def rerun_video(self, ended: VideoJob, job: VideoJob) -> VideoJob:
        """``ended`` (completed or failed) replaced by ``job`` of the same key; the job
        that holds the key after (another node's, when two re-ran it at once)."""
        ...


class Registry(
    AppRows,
    FileRows,
    IntentRows,
    Locks,
    UploadRows,
    WebhookRows,
    PurgeQueue,
    VideoJobRows,
    Protocol,
):
    """Every concern of the registry, in one store that opens, closes and answers ``ping``."""

    async def open(self) -> None: ...
    async def close(self) -> None: ...
    async def ping(self) -> None:
        """Readiness: raises ``RegistryUnavailable`` (or ``SchemaMismatch``) when not usable."""
        ...


# Optional abilities: a registry may also implement these; callers test with ``isinstance``.
@runtime_checkable
class SharedLimits(Protocol):
    """Token buckets shared by every node (PostgreSQL): one rate-limit budget for all."""

    async def take_token(self, key: str, rate: float, burst: float) -> tuple[float, bool]: ...


@runtime_checkable
class QueueDepth(Protocol):
    """How many webhook deliveries wait or are being delivered (the ``/metrics`` gauge)."""

    async def webhook_queue_depth(self) -> int: ...
