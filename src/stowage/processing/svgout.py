"""``output=format:svg``, which filestack-js's schema lets an SDK ask for: the result as
a PNG inside an SVG document of its size. Nothing is traced into vector shapes
(docs/decisions.md); the document holds no script, only the one image.

The PNG is read in blocks and base64-encoded as it is written: never held whole.
"""

from __future__ import annotations

import base64
import math
from pathlib import Path

from stowage import errors

_HEAD = (
    '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
    'width="{w}" height="{h}" viewBox="0 0 {w} {h}">'
    '<image width="{w}" height="{h}" xlink:href="data:image/png;base64,'
)
_TAIL = b'"/></svg>\n'
_BLOCK = 3 * 64 * 1024  # a multiple of 3: each block encodes with no padding inside


def wrap_png(png: Path, dest: Path, width: int, height: int, cap: int) -> None:
    """``dest``: the SVG holding ``png`` (``width`` x ``height``); over ``cap`` bytes it
    is refused before a byte is written."""
    head = _HEAD.format(w=width, h=height).encode()
    size = len(head) + 4 * math.ceil(png.stat().st_size / 3) + len(_TAIL)
    if size > cap:
        raise errors.ImageTooLarge(f"the result would be over {cap} bytes", max_bytes=cap)
    with png.open("rb") as source, dest.open("wb") as out:
        out.write(head)
        while block := source.read(_BLOCK):
            out.write(base64.b64encode(block))
        out.write(_TAIL)
