"""``video_playlist``: an HLS playlist stored as a file, answered with each segment it
names by a Filestack CDN link (the hosted one, ``https://cdn.filestackcontent.com/<H>``,
or this server's) written as this server's link of that handle, carrying the request's
credentials. The hosted service's HLS conversions answer such a playlist's URL,
``/<APIKEY>/video_playlist/<H>``, so that every segment is read with the playlist's
policy; after an import that keeps handles, its segments are files here.

Only links are rewritten: every other line (tags, relative names, other URLs) is kept
byte for byte. No HTTP here.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from stowage import errors

MAX_BYTES = 1 << 20  # a VOD playlist of 5,000 segments is about 400 KiB
HEADER = "#EXTM3U"
#: A Filestack CDN link of one handle, on the hosted CDN or on ``own`` (this server's).
_LINK = r"https?://{host}/([A-Za-z0-9_-]{{20}})(?:\?[^\s\"]*)?"
_HOSTED = r"(?:[a-z0-9-]+\.)*filestackcontent\.com"
_URI = re.compile(r'URI="([^"]*)"')


def rewritten(text: str, own_host: str, link: Callable[[str], str]) -> str:
    """``text`` with each segment link (a line, or a tag's ``URI="..."``) as ``link`` of
    its handle. ``own_host``: this server's CDN host (and port), whose links are
    rewritten too (they gain the request's credentials)."""
    if not text.startswith(HEADER):
        raise errors.UnsupportedMediaType(
            "video_playlist reads an HLS playlist (a file starting with #EXTM3U)"
        )
    hosts = f"(?:{_HOSTED}|{re.escape(own_host)})"
    pattern = re.compile(_LINK.format(host=hosts), re.IGNORECASE)

    def one(found: str) -> str:
        matched = pattern.fullmatch(found.strip())
        return link(matched.group(1)) if matched else found

    lines = text.split("\n")
    for at, line in enumerate(lines):
        if line.startswith("#"):
            lines[at] = _URI.sub(lambda m: f'URI="{one(m.group(1))}"', line)
        elif line.strip():
            ending = "\r" if line.endswith("\r") else ""
            lines[at] = one(line.removesuffix("\r")) + ending
    return "\n".join(lines)
