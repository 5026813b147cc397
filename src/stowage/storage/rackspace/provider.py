"""The Provider interface over Swift: plain PUTs for short writes, segments and an SLO
manifest (the atomic switch) for long ones, ranged reads, deletes of large objects with
their segments. The package docstring (``rackspace/__init__.py``) tells the whole design."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import aiohttp

from stowage import errors
from stowage.storage.base import Chunks, ObjectInfo, WriteOptions
from stowage.storage.rackspace.client import Source, SwiftClient, ambiguous
from stowage.storage.rackspace.replies import (
    check_bulk_delete,
    etag,
    expect,
    expect_put,
    info,
    is_slo,
    object_path,
)
from stowage.storage.rackspace.segments import SEGMENTS_SUFFIX, Segment, Segments
from stowage.storage.settings import RackspaceSettings, parse
from stowage.storage.status import whole_size

READ_CHUNK = 256 * 1024


class RackspaceProvider:
    location = "rackspace"
    supports_containers = True

    def __init__(self, settings: RackspaceSettings) -> None:
        self.settings = settings
        self.default_container = settings.container
        self.client = SwiftClient(settings)
        self.segments = Segments(self.client, settings)

    # -- the Provider interface --------------------------------------------------

    async def write(
        self, container: str, key: str, chunks: Chunks, options: WriteOptions
    ) -> ObjectInfo:
        source = Source(chunks)
        inline_limit = min(self.settings.inline_limit, self.settings.segment_size)
        head = await source.read_head(inline_limit)
        if head is not None:
            return await self._replace(
                container, key, lambda: self._put_plain(container, key, head, options), []
            )
        segments = await self.segments.upload(container, key, source)
        return await self._replace(
            container, key, lambda: self._put_manifest(container, key, segments, options), segments
        )

    async def open(
        self,
        container: str,
        key: str,
        start: int = 0,
        end: int | None = None,
        version: str | None = None,
    ) -> AsyncIterator[bytes]:
        headers: dict[str, str] = {}
        if start or end is not None:
            headers["Range"] = f"bytes={start}-{'' if end is None else end}"
        if version is not None:
            headers["If-Match"] = f'"{version}"'
        async with self.client.request("GET", object_path(container, key), headers=headers) as resp:
            if version is not None and (
                resp.status == 412 or (resp.status < 300 and etag(resp) != version)
            ):
                raise errors.StorageVersionChanged("rackspace: the object was replaced")
            expect(resp, 200, 206)
            async for chunk in _body(resp):
                yield chunk

    async def open_whole(self, container: str, key: str) -> AsyncIterator[ObjectInfo | bytes]:
        # One GET: its headers are the stat of the version its body is (for a large object,
        # the manifest's, as a HEAD would say).
        async with self.client.request("GET", object_path(container, key)) as resp:
            expect(resp, 200)
            if resp.content_length is None:  # never from Swift; no guess at a length
                raise errors.StorageError("rackspace: a GET answered without a length")
            yield info(resp, resp.content_length)
            async for chunk in _body(resp):
                yield chunk

    async def open_span(
        self, container: str, key: str, start: int, end: int
    ) -> AsyncIterator[ObjectInfo | bytes]:
        # One ranged GET: its ETag and Content-Range total are the version it was cut from.
        headers = {"Range": f"bytes={start}-{end}"}
        async with self.client.request("GET", object_path(container, key), headers=headers) as resp:
            expect(resp, 206)
            yield info(resp, whole_size(resp.headers.get("Content-Range"), "rackspace"))
            async for chunk in _body(resp):
                yield chunk

    async def stat(self, container: str, key: str) -> ObjectInfo:
        async with self.client.request("HEAD", object_path(container, key)) as resp:
            expect(resp, 200, 204)
            return info(resp, int(resp.headers.get("Content-Length") or 0))

    async def delete(self, container: str, key: str) -> None:
        path = object_path(container, key)
        async with self.client.request("HEAD", path) as resp:
            expect(resp, 200, 204)
            large = is_slo(resp)
        if not large:
            async with self.client.request("DELETE", path) as resp:
                expect(resp, 204)
            return
        # Swift deletes the segments first, then the manifest, and reports in the body.
        path += "?multipart-manifest=delete"
        async with self.client.request(
            "DELETE", path, headers={"Accept": "application/json"}
        ) as resp:
            expect(resp, 200)
            check_bulk_delete(await resp.json(content_type=None))

    async def sweep_temporary(self) -> int:
        """Delete segments of uploads older than ``orphan_age`` that no manifest uses."""
        removed = 0
        async for store in self.client.names(""):
            if store.endswith(SEGMENTS_SUFFIX):
                removed += await self.segments.sweep(store)
        return removed

    async def keys(self, container: str, prefix: str) -> AsyncIterator[str]:
        async for name in self.client.names(object_path(container), prefix):
            yield name

    async def close(self) -> None:
        await self.client.close()

    # -- writing -------------------------------------------------------------------

    async def _replace(
        self,
        container: str,
        key: str,
        put: Callable[[], Awaitable[ObjectInfo]],
        new_segments: list[Segment],
    ) -> ObjectInfo:
        """Run ``put`` (the atomic switch), then delete the segments of the object it replaced."""
        try:
            old = await self.segments.owned(container, key)
            info = await put()
        except BaseException as exc:
            # When the outcome of the PUT is unknown, its segments may already be in use.
            if not ambiguous(exc):
                await self.segments.discard(container, new_segments)
            raise
        await self.segments.discard(container, old)
        return info

    async def _put_plain(
        self, container: str, key: str, data: bytes, options: WriteOptions
    ) -> ObjectInfo:
        headers = {"Content-Type": options.content_type}
        async with self.client.request(
            "PUT", object_path(container, key), headers=headers, data=data
        ) as resp:
            expect_put(resp, container)
            return info(resp, len(data))

    async def _put_manifest(
        self, container: str, key: str, segments: list[Segment], options: WriteOptions
    ) -> ObjectInfo:
        store = container + SEGMENTS_SUFFIX
        manifest = [
            {"path": f"/{store}/{s.name}", "etag": s.etag, "size_bytes": s.size} for s in segments
        ]
        path = object_path(container, key) + "?multipart-manifest=put"
        headers = {"Content-Type": options.content_type}
        data = json.dumps(manifest).encode()
        async with self.client.request("PUT", path, headers=headers, data=data) as resp:
            expect_put(resp, container)
            return info(resp, sum(s.size for s in segments))


def from_config(config: Mapping[str, Any], data_dir: Path) -> RackspaceProvider:
    """The provider of a configuration table (``build`` takes settings already parsed)."""
    return build(parse(RackspaceSettings, config), data_dir)


def build(settings: RackspaceSettings, data_dir: Path) -> RackspaceProvider:
    return RackspaceProvider(settings)


async def _body(resp: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
    try:
        async for chunk in resp.content.iter_chunked(READ_CHUNK):
            yield chunk
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise errors.StorageUnavailable("rackspace: read interrupted") from exc
