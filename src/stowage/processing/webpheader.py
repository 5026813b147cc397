"""Whether a WebP source is lossless, read from its chunk headers (8 bytes a chunk, no
pixel decoded), and whether its result keeps it so.

A WebP file is a RIFF of chunks: a still is one ``VP8 `` (lossy) or ``VP8L`` (lossless)
chunk, or a ``VP8X`` header followed by its image's chunk (``ALPH`` then ``VP8 `` for a
lossy one with alpha); an animation's frames are each an ``ANMF`` chunk holding 16 bytes
of placement and duration, then that frame's ``ALPH``/``VP8 `` or ``VP8L``. libvips'
loader does not say which it read: a lossless source saved with webpsave's defaults was
made lossy (quality 75), its pixels changed by a flip.
"""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

from stowage.processing.base import Chain, Output

_FRAME_HEADER = 16  # an ANMF chunk's placement, size, duration and flags


def lossless(path: Path) -> bool:
    """Whether every image ``path`` holds (each frame of an animation) is ``VP8L``: one
    lossy frame makes the file lossy. False for a file that is no WebP or is damaged."""
    with path.open("rb") as file:
        head = file.read(12)
        if len(head) < 12 or head[:4] != b"RIFF" or head[8:12] != b"WEBP":
            return False
        end = 8 + int.from_bytes(head[4:8], "little")
        kinds = _images(file, 12, end)
    return bool(kinds) and kinds == {b"VP8L"}


def _images(file: BinaryIO, at: int, end: int) -> set[bytes]:
    """The kinds of the image chunks between ``at`` and ``end`` (frames' included),
    stopping at the first lossy one."""
    kinds: set[bytes] = set()
    while at + 8 <= end:
        file.seek(at)
        header = file.read(8)
        if len(header) < 8:
            break
        name, size = header[:4], int.from_bytes(header[4:], "little")
        if name in (b"VP8 ", b"VP8L"):
            kinds.add(name)
            if name == b"VP8 ":
                return kinds
        elif name == b"ANMF":
            kinds |= _images(file, at + 8 + _FRAME_HEADER, min(end, at + 8 + size))
            if b"VP8 " in kinds:
                return kinds
        at += 8 + size + (size & 1)  # chunks are padded to an even size
    return kinds


def kept_lossless(chain: Chain, output: Output, source: Path, loader: str) -> bool:
    """A lossless WebP source whose result is WebP because the source is (no format and
    no quality asked) is saved lossless: the chain asked for no loss. ``loader``:
    libvips' loader of the source (``webpload``)."""
    if output.format != "webp" or loader.removesuffix("_source") != "webpload":
        return False
    if chain.output_format is not None or _quality_asked(chain):
        return False
    return lossless(source)


def _quality_asked(chain: Chain) -> bool:
    return any(
        t.name in ("quality", "pjpg") or (t.name == "output" and t.get("quality") is not None)
        for t in chain.tasks
    )
