"""Palette PNGs and GIFs whose entries are all grey: read as grey (one band, and alpha
where the palette has transparency), as a grey PNG is. libvips reads any palette as
sRGB, so such a file came out as three equal bands through every chain, where a grey
source stays grey (docs/decisions.md, "Sample formats and colour kinds").

A PNG's palette is read from its ``PLTE`` and ``tRNS`` chunks, which come before the
pixels; a GIF's from its colour tables (``gifblocks.grey_tables``): no decode.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pyvips

from stowage.processing import gifblocks

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_MAX_CHUNKS = 64  # chunks before PLTE (text, profile, ...): a file with more is colour


def grey_palette(image: pyvips.Image, source: Path) -> bool:
    """Whether ``image``, read from ``source``, is a palette PNG or a GIF whose entries
    are all grey (a fully transparent entry's colour is never seen: libimagequant gives
    it one)."""
    if image.bands < 3 or image.format != "uchar":
        return False
    if _loader(image).startswith(("gifload", "nsgifload")):
        return gifblocks.grey_tables(source)
    if not _is_palette_png(image):
        return False
    found = _palette(source)
    if not found:
        return False
    entries, alphas = found
    shown = (e for i, e in enumerate(entries) if i >= len(alphas) or alphas[i])
    return all(r == g == b for r, g, b in shown)


def as_grey(image: pyvips.Image) -> pyvips.Image:
    """The grey band (and alpha) of an image whose colour bands are equal."""
    grey = image[0] if image.bands == 3 else image[0].bandjoin(image[3])
    return grey.copy(interpretation="b-w")


def _loader(image: pyvips.Image) -> str:
    return str(image.get("vips-loader")) if image.get_typeof("vips-loader") else ""


def _is_palette_png(image: pyvips.Image) -> bool:
    if not image.get_typeof("palette"):
        return False
    return _loader(image).startswith("pngload") and bool(image.get("palette"))


Palette = tuple[list[tuple[int, int, int]], bytes]


def _palette(source: Path) -> Palette | None:
    """The entries of the PNG's ``PLTE`` chunk and the alphas of its ``tRNS`` chunk
    (entries past its end are opaque), or None when it has no palette before IDAT."""
    entries: list[tuple[int, int, int]] | None = None
    try:
        with source.open("rb") as file:
            if file.read(8) != _SIGNATURE:
                return None
            for _ in range(_MAX_CHUNKS):
                head = file.read(8)
                if len(head) < 8:
                    return None
                length, kind = struct.unpack(">I4s", head)
                if kind in (b"IDAT", b"IEND"):
                    return None if entries is None else (entries, b"")
                if kind == b"PLTE":
                    data = file.read(length)
                    entries = [
                        (data[i], data[i + 1], data[i + 2]) for i in range(0, len(data) - 2, 3)
                    ]
                    length = 0
                elif kind == b"tRNS" and entries is not None:
                    return entries, file.read(length)
                file.seek(length + 4, 1)  # the chunk's data (unless read) and CRC
    except OSError:
        return None
    return None
