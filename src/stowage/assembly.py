"""The one place that builds Stowage: every part created once and handed down.

``assemble(settings)`` builds the registry, the providers, the url fetcher, the change
path (webhooks, the derivative cache and the edge's cache targets), the file operations
(``Stowage``), apps, resumable uploads, the transformation engine, the video jobs and the
rate limiter,
each taking only the parts it uses. The HTTP applications (``http/app.py``) hold the
``Assembly``; the command line builds the same one.

Two ways to run it: ``start`` for a server (opens the registry, runs start-up recovery
unless told not to, starts the background workers), ``open`` for a process that serves
nothing (``stowage apps``, ``verify``, ``fsck``): the registry only, no recovery (it
would hide what fsck reports, and a pending row may belong to a live node's upload),
no workers. ``close`` undoes either.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from stowage import errors
from stowage.config import Settings
from stowage.core.apps import Apps
from stowage.core.events import Changes
from stowage.core.fetch import Fetcher
from stowage.core.janitor import Janitor
from stowage.core.links import Links
from stowage.core.providers import Providers
from stowage.core.ratelimits import RateLimiter, shared_buckets
from stowage.core.recovery import Recovery
from stowage.core.security import Credentials
from stowage.core.service import Stowage
from stowage.core.uploads import Uploads
from stowage.core.webhooks import Webhooks
from stowage.edge import EdgePurger, NullPurger, build_purger
from stowage.processing.service import Core, Processor
from stowage.processing.videojobs import Remove, VideoJobs
from stowage.registry import build_registry
from stowage.registry.base import Registry


@dataclass
class Assembly:
    settings: Settings
    registry: Registry
    providers: Providers
    fetcher: Fetcher
    links: Links
    changes: Changes
    webhooks: Webhooks
    edge: EdgePurger | NullPurger
    service: Stowage
    apps: Apps
    uploads: Uploads
    processor: Processor
    video: VideoJobs
    limiter: RateLimiter
    recovery: Recovery
    janitor: Janitor
    draining: bool = False  # set on SIGTERM: /readyz fails while requests drain

    async def open(self) -> None:
        """For a process that serves nothing: the registry, without recovery or workers."""
        await self.registry.open()

    async def start(self, recover: bool = True) -> None:
        """``recover=False`` for worker processes: their parent recovered before forking."""
        await self.registry.open()
        if recover:
            await self.recovery.recover()
        self.janitor.start()
        await self.webhooks.start()
        await self.edge.start()
        self.uploads.start_sweeper()
        self.video.start()
        if self.settings.office_prewarm:  # in the background: startup does not wait
            self.processor.office.prewarm()

    async def close(self) -> None:
        await self.video.close()
        await self.uploads.close()
        await self.janitor.close()
        await self.processor.close()
        await self.edge.close()
        await self.webhooks.close()
        await self.fetcher.close()
        await self.providers.close()
        await self.registry.close()

    async def ready(self) -> None:
        """Readiness: raises a ``StowageError`` when this node should get no traffic."""
        if self.draining:
            raise errors.ShuttingDown()
        await self.registry.ping()


def assemble(settings: Settings) -> Assembly:
    registry = build_registry(settings)
    providers = Providers(settings, registry)
    fetcher = build_fetcher(settings)
    links = Links(settings)
    edge = build_purger(settings, registry)
    webhooks = Webhooks(settings, registry, links.file_url)
    changes = Changes(edge, [webhooks, edge])
    service = Stowage(settings, registry, providers, fetcher, changes)
    processor = Processor(Core(settings, registry, providers, fetcher, service.store))
    changes.add(processor)  # built on the service's store, so added last
    video = VideoJobs(
        settings,
        registry,
        registry,
        providers,
        service.store,
        _remover(service),
        links.file_url,
        webhooks.announce,
        fetcher,
    )
    changes.add(video)
    recovery = Recovery(settings, registry, providers)
    return Assembly(
        settings=settings,
        registry=registry,
        providers=providers,
        fetcher=fetcher,
        links=links,
        changes=changes,
        webhooks=webhooks,
        edge=edge,
        service=service,
        apps=Apps(registry, changes),
        uploads=Uploads(settings, registry, providers, service.store),
        processor=processor,
        video=video,
        limiter=RateLimiter(settings, shared_buckets(registry)),  # PostgreSQL: one budget
        recovery=recovery,
        janitor=Janitor(settings, registry, recovery.clean_up),
    )


def _remover(service: Stowage) -> Remove:
    async def remove(handle: str, api_key: str, creds: Credentials) -> None:
        await service.remove(handle, creds, skip_storage=False, api_key=api_key)

    return remove


def build_fetcher(
    settings: Settings, max_bytes: int | None = None, max_concurrent: int | None = None
) -> Fetcher:
    """The guarded fetcher with the service's fetch settings; an import fetches files as
    large as a store may be, as many at once as it runs (one owner: no share, no bound
    on the wait for a slot)."""
    own = max_concurrent is None
    return Fetcher(
        allow_private=settings.fetch_allow_private,
        connect_timeout=settings.fetch_connect_timeout,
        read_timeout=settings.fetch_read_timeout,
        total_timeout=settings.fetch_total_timeout,
        max_redirects=settings.fetch_max_redirects,
        max_bytes=settings.fetch_max_bytes if max_bytes is None else max_bytes,
        max_concurrent=settings.fetch_max_concurrent if max_concurrent is None else max_concurrent,
        per_app=settings.fetch_app_max_concurrent if own else None,
        slot_wait=settings.fetch_slot_wait if own else math.inf,
        min_rate=settings.fetch_min_rate,
        background_slot_wait=settings.fetch_background_slot_wait if own else math.inf,
        user_agent=settings.fetch_user_agent,
    )


async def open_stores(settings: Settings) -> tuple[Registry, Providers]:
    """The registry, opened, and its providers, for a tool that serves nothing (import,
    migrate): no recovery and no workers. The caller closes both."""
    registry = build_registry(settings)
    await registry.open()
    return registry, Providers(settings, registry)


def providers_over(settings: Settings, registry: Registry) -> Providers:
    """The providers of the apps in another registry than the settings' (a backup's
    snapshot, a registry being restored)."""
    return Providers(settings, registry)
