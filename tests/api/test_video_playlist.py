"""``/<APIKEY>/video_playlist/<H>``: a stored HLS playlist (as the hosted service's HLS
conversions link it, and filestack-ruby's ``video_playlist`` task builds it) answered
with its segment links as this server's, each carrying the request's policy, which then
reads every segment."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from tests.api.harness import Harness

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


async def _playlist(harness: Harness, app_secure: bool) -> tuple[str, list[str], list[bytes]]:
    app = harness.secure_app if app_secure else harness.open_app
    bodies = [b"segment one" * 50, b"segment two" * 70]
    handles = [
        str((await harness.store(b, app, filename=f"s{i}.ts"))["handle"])
        for i, b in enumerate(bodies)
    ]
    own = harness.parts.settings.cdn_url()
    text = (
        "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:6\n#EXTINF:6.0,\n"
        f"https://cdn.filestackcontent.com/{handles[0]}\n#EXTINF:6.0,\n"
        f"{own}/{handles[1]}\nrelative.ts\n#EXT-X-ENDLIST\n"
    )
    stored = await harness.store(text.encode(), app, filename="v.m3u8")
    return str(stored["handle"]), handles, bodies


async def test_the_segment_links_are_this_servers(harness: Harness) -> None:
    handle, segments, bodies = await _playlist(harness, app_secure=False)
    key = harness.open_app.api_key
    for path in (f"/{key}/video_playlist/{handle}", f"/video_playlist/{handle}"):
        resp = await harness.cdn.get(path)
        assert resp.status == 200, await resp.text()
        assert resp.headers["Content-Type"].startswith("application/vnd.apple.mpegurl")
        lines = (await resp.text()).splitlines()
        own = harness.parts.settings.cdn_url()
        assert [line for line in lines if "://" in line] == [f"{own}/{h}" for h in segments]
        assert "relative.ts" in lines and lines[0] == "#EXTM3U"
    for segment, body in zip(segments, bodies, strict=True):
        got = await harness.cdn.get(f"/{segment}")
        assert await got.read() == body
    api = await harness.api.get(f"/process/{key}/video_playlist/{handle}")
    assert api.status == 200 and f"/{segments[0]}" in await api.text()


async def test_the_requests_policy_reaches_every_segment(harness: Harness) -> None:
    app = harness.secure_app
    handle, _, bodies = await _playlist(harness, app_secure=True)
    assert (await harness.cdn.get(f"/{app.api_key}/video_playlist/{handle}")).status == 401
    policy = harness.policy(app, call=["read"])
    resp = await harness.cdn.get(f"/{app.api_key}/video_playlist/{handle}", params=policy)
    assert resp.status == 200, await resp.text()
    assert resp.headers["Cache-Control"] == "private, no-store"
    links = [line for line in (await resp.text()).splitlines() if "://" in line]
    assert len(links) == 2 and all(policy["signature"] in link for link in links)
    for link, body in zip(links, bodies, strict=True):
        parts = urlsplit(link)
        got = await harness.cdn.get(f"{parts.path}?{parts.query}")
        assert got.status == 200 and await got.read() == body
    inline = f"security=p:{policy['policy']},s:{policy['signature']}"
    resp = await harness.cdn.get(f"/{app.api_key}/{inline}/video_playlist/{handle}")
    assert resp.status == 200 and policy["signature"] in await resp.text()


async def test_what_is_no_playlist_is_refused(harness: Harness) -> None:
    key = harness.open_app.api_key
    handle, _, _ = await _playlist(harness, app_secure=False)
    other = (await harness.store(b"not a playlist", filename="x.txt"))["handle"]
    for path, status, code in (
        (f"/{key}/video_playlist/{other}", 415, "UNSUPPORTED_MEDIA_TYPE"),
        (f"/{key}/video_playlist/flip/{handle}", 400, "INVALID_PARAMETER"),
        (f"/{key}/video_playlist/{'Z' * 20}", 404, "HANDLE_NOT_FOUND"),
    ):
        resp = await harness.cdn.get(path)
        assert resp.status == status and (await resp.json())["error"]["code"] == code, path
