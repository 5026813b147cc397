"""The registry object: one small object per concern behind the one ``Registry`` face.

A backend builds its store (connections, schema, ``open``/``close``/``ping``) and one
object per concern on it, and hands them here. Callers that take a narrow protocol
(``FileRows``, ``WebhookRows``, ...) may be given this object or the concern itself.
"""

from __future__ import annotations

from typing import Protocol

from stowage.registry.base import (
    AppRows,
    FileRows,
    IntentRows,
    Locks,
    PurgeQueue,
    UploadRows,
    VideoJobRows,
    WebhookRows,
)


class Store(Protocol):
    async def open(self) -> None: ...
    async def close(self) -> None: ...
    async def ping(self) -> None: ...


class ComposedRegistry:
    def __init__(
        self,
        store: Store,
        apps: AppRows,
        files: FileRows,
        intents: IntentRows,
        locks: Locks,
        uploads: UploadRows,
        webhooks: WebhookRows,
        purges: PurgeQueue,
        videos: VideoJobRows,
    ) -> None:
        self.store, self.apps, self.files, self.intents = store, apps, files, intents
        self.locks, self.uploads, self.webhooks, self.purges = locks, uploads, webhooks, purges
        self.open, self.close, self.ping = store.open, store.close, store.ping
        self.create_app, self.get_app, self.list_apps = (
            apps.create_app,
            apps.get_app,
            apps.list_apps,
        )
        self.update_app, self.delete_app = apps.update_app, apps.delete_app
        self.reserve, self.commit, self.abandon = files.reserve, files.commit, files.abandon
        self.get, self.update, self.delete = files.get, files.update, files.delete
        self.list_files, self.pending, self.all_files = (
            files.list_files,
            files.pending,
            files.all_files,
        )
        self.intend_overwrite = intents.intend_overwrite
        self.overwrite_intents = intents.overwrite_intents
        self.settle_overwrite = intents.settle_overwrite
        self.pending_overwrite = intents.pending_overwrite
        self.handle_lock, self.exclusive = locks.handle_lock, locks.exclusive
        self.create_upload, self.get_upload = uploads.create_upload, uploads.get_upload
        self.put_upload_part, self.upload_parts = uploads.put_upload_part, uploads.upload_parts
        self.finish_upload, self.delete_upload = uploads.finish_upload, uploads.delete_upload
        self.expired_uploads = uploads.expired_uploads
        self.enqueue_webhooks, self.claim_webhooks = (
            webhooks.enqueue_webhooks,
            webhooks.claim_webhooks,
        )
        self.finish_webhook, self.webhook_log = webhooks.finish_webhook, webhooks.webhook_log
        self.prune_webhooks = webhooks.prune_webhooks
        self.webhook_queue_depth = webhooks.webhook_queue_depth
        self.enqueue_purges, self.claim_purges = purges.enqueue_purges, purges.claim_purges
        self.finish_purge, self.purge_queue_depth = purges.finish_purge, purges.purge_queue_depth
        self.videos = videos
        self.ask_video, self.video_job = videos.ask_video, videos.video_job
        self.claim_videos, self.finish_video = videos.claim_videos, videos.finish_video
        self.forget_videos, self.renew_video = videos.forget_videos, videos.renew_video
        self.rerun_video, self.video_progress = videos.rerun_video, videos.video_progress
