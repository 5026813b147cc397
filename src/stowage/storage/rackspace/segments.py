"""Large objects: a long write is streamed into segments of at most ``segment_size`` bytes
under ``<key>/<upload id>/`` in the ``<container>_segments`` container, which a static
large object (SLO) manifest joins. Here: writing them, finding an object's own, sweeping
the ones a crash left, and deleting them (best effort)."""

from __future__ import annotations

import logging
import secrets
import time
from dataclasses import dataclass

from stowage import errors
from stowage.storage.rackspace.client import SegmentBody, Source, SwiftClient
from stowage.storage.rackspace.replies import etag, expect, expect_put, is_slo, object_path
from stowage.storage.settings import RackspaceSettings

log = logging.getLogger(__name__)
SEGMENTS_SUFFIX = "_segments"


@dataclass
class Segment:
    name: str
    etag: str
    size: int


class Segments:
    def __init__(self, client: SwiftClient, settings: RackspaceSettings) -> None:
        self.client = client
        self.settings = settings
        self._made_stores: set[str] = set()

    async def upload(self, container: str, key: str, source: Source) -> list[Segment]:
        store = container + SEGMENTS_SUFFIX
        prefix = f"{key}/{int(time.time())}-{secrets.token_hex(6)}/"
        segments: list[Segment] = []
        try:
            await self._ensure_store(store)
            while not await source.at_eof():
                if len(segments) >= self.settings.max_segments:
                    raise errors.StorageFull(
                        f"rackspace: object exceeds {self.settings.max_segments} segments"
                    )
                name = f"{prefix}{len(segments):08d}"
                segments.append(await self._put_segment(store, name, source))
        except BaseException:
            await self.discard(container, segments)
            raise
        return segments

    async def _put_segment(self, store: str, name: str, source: Source) -> Segment:
        body = SegmentBody(source, self.settings.segment_size)
        headers = {"Content-Type": "application/octet-stream"}
        async with self.client.request(
            "PUT", object_path(store, name), headers=headers, data=body
        ) as resp:
            expect_put(resp, store)
            return Segment(name, etag(resp), body.sent)

    async def _ensure_store(self, container: str) -> None:
        if container in self._made_stores:
            return
        async with self.client.request("PUT", object_path(container)) as resp:
            expect(resp, 201, 202, 204)
        self._made_stores.add(container)

    async def owned(self, container: str, key: str) -> list[Segment]:
        """The segments this provider made for the SLO now stored at ``key``, if it is one."""
        path = object_path(container, key)
        async with self.client.request("HEAD", path) as resp:
            if resp.status == 404:
                return []
            expect(resp, 200, 204)
            if not is_slo(resp):
                return []
        async with self.client.request("GET", path + "?multipart-manifest=get") as resp:
            if resp.status == 404:
                return []
            expect(resp, 200)
            listing = await resp.json(content_type=None)
        mine = f"/{container}{SEGMENTS_SUFFIX}/{key}/"
        return [
            Segment(item["name"][len(f"/{container}{SEGMENTS_SUFFIX}/") :], "", 0)
            for item in listing
            if str(item.get("name", "")).startswith(mine)
        ]

    async def sweep(self, store: str) -> int:
        """Deletes the segments in ``store`` of uploads older than ``orphan_age`` that no
        manifest uses."""
        container = store[: -len(SEGMENTS_SUFFIX)]
        cutoff = time.time() - self.settings.orphan_age
        removed = 0
        group: list[Segment] = []
        # Listings are sorted, so the segments of one upload are contiguous.
        async for name in self.client.names(object_path(store)):
            if group and upload_of(group[0].name) != upload_of(name):
                removed += await self._sweep_upload(container, group, cutoff)
                group = []
            group.append(Segment(name, "", 0))
        if group:
            removed += await self._sweep_upload(container, group, cutoff)
        return removed

    async def _sweep_upload(self, container: str, group: list[Segment], cutoff: float) -> int:
        upload = upload_of(group[0].name)
        if upload is None or upload[1] >= cutoff:
            return 0
        in_use = {s.name for s in await self.owned(container, upload[0])}
        if in_use & {s.name for s in group}:
            return 0
        await self.discard(container, group)
        return len(group)

    async def discard(self, container: str, segments: list[Segment]) -> None:
        """Best effort: a segment left behind wastes space but breaks nothing."""
        store = container + SEGMENTS_SUFFIX
        for segment in segments:
            try:
                async with self.client.request("DELETE", object_path(store, segment.name)) as resp:
                    if resp.status not in (204, 404):
                        log.warning("rackspace: segment delete answered %s", resp.status)
            except errors.StorageError as exc:
                log.warning("rackspace: could not delete a segment: %s", exc.message)


def upload_of(segment: str) -> tuple[str, float] | None:
    """(key, start time) of the upload a segment name belongs to; None if not one of ours."""
    parts = segment.rsplit("/", 2)
    if len(parts) != 3 or not parts[2].isdigit():
        return None
    started, _, tag = parts[1].partition("-")
    if not started.isdigit() or not tag:
        return None
    return parts[0], float(started)
