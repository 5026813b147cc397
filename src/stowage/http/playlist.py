"""``/<APIKEY>/video_playlist/<HANDLE>`` (CDN, and the API's ``/process/``): a stored HLS
playlist with its segment links as this server's, carrying the request's credentials
(``core/playlists.py``). The playlist is read as a download is: the app's security asks
a ``read`` policy, which then reaches every segment."""

from __future__ import annotations

from urllib.parse import urlencode, urlsplit

from aiohttp import web

from stowage import errors
from stowage.core import playlists, reading
from stowage.edge.headers import TAG_HEADER
from stowage.http.api import request_credentials
from stowage.http.cdnpath import CdnPath
from stowage.http.keys import PARTS


async def answer(request: web.Request, path: CdnPath) -> web.Response:
    if path.tasks or path.url or path.urls or path.handles or path.metadata or not path.handle:
        raise errors.InvalidParameter(
            "video_playlist reads one stored playlist: /<APIKEY>/video_playlist/<HANDLE>, "
            "with no other task",
            parameter="video_playlist",
        )
    parts = request.app[PARTS]
    creds = request_credentials(request, path)
    api_key = path.api_key or request.query.get("key")
    plan = await parts.service.download(path.handle, creds, api_key)
    if plan.info.size > playlists.MAX_BYTES:
        raise errors.UnsupportedMediaType(
            f"video_playlist reads an HLS playlist of at most {playlists.MAX_BYTES} bytes"
        )
    # The row's size was checked; the bytes read are held to it too (an overwrite may
    # have come between).
    chunks = reading.whole(plan.provider, plan.record.container, plan.record.key, _head)
    try:
        text = b"".join([chunk async for chunk in chunks]).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise errors.UnsupportedMediaType("video_playlist reads an HLS playlist") from exc
    asked = {"policy": creds.policy, "signature": creds.signature}
    query = urlencode({name: value for name, value in asked.items() if value})
    base = parts.settings.cdn_url()

    def link(handle: str) -> str:
        return f"{base}/{handle}" + (f"?{query}" if query else "")

    body = playlists.rewritten(text, urlsplit(base).netloc, link)
    return web.Response(
        text=body,
        content_type="application/vnd.apple.mpegurl",
        headers={
            "X-Content-Type-Options": "nosniff",
            # The answer carries the request's policy: for it alone.
            "Cache-Control": "private, no-store" if query else "public, max-age=60",
            TAG_HEADER: path.handle,  # purged with the playlist's file
        },
    )


def _head(size: int) -> tuple[int, int] | None:
    return (0, min(size, playlists.MAX_BYTES) - 1) if size else None
