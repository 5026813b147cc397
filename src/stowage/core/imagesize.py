"""An image's width and height from its first bytes, without decoding a pixel: for the
``width`` and ``height`` metadata fields.

PNG, GIF, JPEG and WebP (what users upload most) are read by the small parsers here,
HEIF (HEIC, AVIF) by its boxes (``heifsize``), SVG by its root element (``svgsize``:
librsvg's rules, nothing drawn); other formats by Pillow's header parsers
(``Image.open`` reads no pixels). The sizes are the ones the transformation engine reads:
the coded size, an Exif orientation not applied (as the engine's renders keep it), but a
HEIF's ``irot`` turn applied, as libheif applies it on load (a turned AVIF was 160x100
here, 100x160 to ``imagesize``). Nothing here
limits pixel counts: it only reports them, so a decompression bomb is reported as the
size its header claims (except by Pillow, which refuses past its own bomb limit: then
the size is unknown and omitted).
"""

from __future__ import annotations

import asyncio
import io
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import BinaryIO

from stowage.core import bmpsize, filetypes, headwalk, heifsize, reading, svgsize
from stowage.registry.base import FileRecord
from stowage.storage.base import LocalFiles, Provider

#: The leading bytes read: enough for a JPEG's frame header after its EXIF, ICC and
#: thumbnail segments (64 KiB each at most) in practice.
HEADER_BYTES = 1 << 20
_TIFF = (b"II*\0", b"MM\0*")
#: An AVIF's ``irot`` and ``imir`` boxes turn and mirror the picture it shows: libheif
#: applies them when it decodes (the image engine's sizes are the turned ones); Pillow
#: reports the coded size and the transform as the Exif orientation it writes into
#: ``info["exif"]`` (in place of the file's own Exif one, which neither decoder applies).
#: A TIFF's orientation tag is not applied by libvips either, but Pillow's size is turned
#: by it: a TIFF's size is read from its width and length tags.
_ORIENTATION = 0x0112
_TURNED = {5, 6, 7, 8}


async def fields(
    provider: Provider, record: FileRecord, size: int, names: Sequence[str]
) -> dict[str, int]:
    """The metadata fields ``names`` (``width``, ``height``) of a stored image, from its
    header; none for a file that is no image (by its type, or by its header)."""
    if not record.mimetype.startswith("image/") or size == 0:
        return {}
    if isinstance(provider, LocalFiles):
        path = provider.local_path(record.container, record.key)
        found = await asyncio.to_thread(dimensions_in, path)
    else:
        found = await _stored_dimensions(provider, record, size)
    if found is None:
        return {}
    sides = {"width": found[0], "height": found[1]}
    return {name: sides[name] for name in names}


def _head(size: int) -> tuple[int, int] | None:
    return (0, min(size, HEADER_BYTES) - 1) if size else None


async def _stored_dimensions(
    provider: Provider, record: FileRecord, size: int
) -> tuple[int, int] | None:
    """``dimensions`` of a file in a remote store: its first MiB, then what lies further
    (a JPEG's frame header, a TIFF's directory: ``headwalk``) read where it lies."""

    async def read(at: int, count: int) -> bytes:
        if at >= size:  # past the end: nothing to read (a span of None is the whole file)
            return b""

        def span(now: int) -> tuple[int, int]:  # the size now: the file may be replaced
            return (at, min(now, at + count) - 1) if at < now else (0, 0)

        chunks = reading.whole(provider, record.container, record.key, span)
        return b"".join([chunk async for chunk in chunks])[:count]

    async def read_most(at: int, _least: int, most: int) -> bytes:
        return await read(at, most)  # a remote read costs a round trip: as much as useful

    head = await read(0, HEADER_BYTES)
    found = dimensions(head)
    if found is not None:
        return found
    return await headwalk.walked_remote(headwalk.further(head), read_most)


def dimensions(head: bytes) -> tuple[int, int] | None:
    """(width, height) of the image whose file starts with ``head``, or None when it is
    no image this can read."""
    return _read(_parser(head), head)


def read_here(head: bytes) -> tuple[int, int] | None:
    """The size claimed by the header of the formats users upload most, and of BMP and
    ICO, from this module's own parsers (PNG, GIF, JPEG, WebP, BMP, ICO): None for any
    other. A GIF's claim is its logical screen (the limits hold it to that), not the
    canvas ``dimensions`` tells; an ICO's is its shown entry's, when within ``head``."""
    parser = _parser(head)
    if parser is _gif_canvas:
        return _read(_gif, head)
    return None if parser in (_pillow, _heif, svgsize.drawn_size) else _read(parser, head)


def _read(parser: Callable[[bytes], tuple[int, int] | None], head: bytes) -> tuple[int, int] | None:
    try:
        found = parser(head)
    except (IndexError, ValueError):
        return None
    if found is None or found[0] <= 0 or found[1] <= 0:
        return None
    return found


def dimensions_in(path: Path) -> tuple[int, int] | None:
    """The same, for a file on this machine: its first bytes, and for a TIFF whose
    directory lies past them (libtiff writes it after the pixels) Pillow's parser, which
    seeks to the directory and reads no pixel; then what ``headwalk`` reads where it lies
    (a JPEG's frame header past the head, a BigTIFF's directory)."""
    try:
        with path.open("rb") as file:
            head = file.read(HEADER_BYTES)
            found = dimensions(head)
            if found is None and head[:4] in _TIFF:
                file.seek(0)
                found = _pillow(file)
            if found is not None:
                return found

            def read_least(at: int, least: int, _most: int) -> bytes:
                file.seek(at)  # a JPEG's segment headers, never their bodies
                return file.read(least)

            return headwalk.walked(headwalk.further(head), read_least)
    except OSError:  # removed or replaced meanwhile: no size to tell
        return None


def _parser(head: bytes) -> Callable[[bytes], tuple[int, int] | None]:
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return _png
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return _gif_canvas
    if head.startswith(b"\xff\xd8"):
        return _jpeg
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return _webp
    if filetypes.is_heif(head):
        return _heif
    if bmpsize.is_bmp(head):
        return bmpsize.bmp_size
    if bmpsize.is_ico(head):  # Pillow's opener decodes the icon: no decode here
        return _ico
    if head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] == b"<":  # markup: an SVG's root tells
        return svgsize.drawn_size
    return _pillow


def _ico(head: bytes) -> tuple[int, int] | None:
    """The size of the entry the engine shows (``bmpsize.chosen``), from its PNG or DIB
    header when within ``head`` (an icon's entries are a few KB)."""
    entry = bmpsize.chosen(head)
    if entry is None:
        return None
    return bmpsize.entry_size(head[entry.offset : entry.offset + 24])


def _png(head: bytes) -> tuple[int, int] | None:
    if head[12:16] != b"IHDR":
        return None
    return _be(head, 16, 4), _be(head, 20, 4)


def _gif(head: bytes) -> tuple[int, int]:
    return _le(head, 6, 2), _le(head, 8, 2)


#: Logical screens libnsgif (libvips' GIF loader) takes for an encoder's screen size, not
#: the picture's: with a zero side or one past 2048, the canvas is the first frame's.
_SCREENS_IGNORED = {(640, 480), (640, 512), (800, 600), (1024, 768), (1280, 1024), (1600, 1200)}


def _gif_canvas(head: bytes) -> tuple[int, int]:
    """The canvas libvips draws a GIF on: its logical screen (but for the ones libnsgif
    ignores, then 1x1), grown to hold the first frame where it lies. A 10x10 screen with
    a 40x30 first frame was 10x10 to the metadata and 40x30 to ``imagesize``."""
    width, height = _gif(head)
    if (width, height) in _SCREENS_IGNORED or 0 in (width, height) or max(width, height) > 2048:
        width, height = 1, 1
    frame = _first_frame(head)
    if frame is None:  # past the bytes read: the screen, as the header claims it
        return _gif(head)
    left, top, frame_w, frame_h = frame
    return max(width, left + frame_w), max(height, top + frame_h)


def _first_frame(head: bytes) -> tuple[int, int, int, int] | None:
    """The first image descriptor's left, top, width and height; None when it is not
    within ``head`` (extensions' blocks skipped)."""
    flags = _le(head, 10, 1)
    at = 13 + (3 << ((flags & 7) + 1) if flags & 0x80 else 0)  # after the global palette
    while at < len(head):
        kind = head[at]
        if kind == 0x2C and at + 9 <= len(head):  # the image descriptor
            left, top, width, height = (_le(head, at + i, 2) for i in (1, 3, 5, 7))
            return left, top, width, height
        if kind != 0x21:  # the trailer, or damage: no frame
            return None
        at += 2  # introducer and label, then the data sub-blocks up to an empty one
        while at < len(head) and head[at]:
            at += head[at] + 1
        at += 1
    return None


def _jpeg(head: bytes) -> tuple[int, int] | None:
    return headwalk.jpeg_walk(head, 0, 2)[0]


def _webp(head: bytes) -> tuple[int, int] | None:
    chunk = head[12:16]
    if chunk == b"VP8 ":  # lossy: the key frame's 14-bit sizes
        return _le(head, 26, 2) & 0x3FFF, _le(head, 28, 2) & 0x3FFF
    if chunk == b"VP8L":  # lossless: 14-bit sizes less one, packed after the signature
        bits = _le(head, 21, 4)
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X":  # extended: 24-bit canvas sizes less one
        return _le(head, 24, 3) + 1, _le(head, 27, 3) + 1
    return None


def _heif(head: bytes) -> tuple[int, int] | None:
    try:
        found = heifsize.shown_size(head)
    except (IndexError, ValueError):  # damaged boxes: Pillow may still read an AVIF
        found = None
    return found or _pillow(head)


def _pillow(source: bytes | BinaryIO) -> tuple[int, int] | None:
    from PIL import Image

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # bomb and corrupt-data warnings: the size still is
        try:
            opened = io.BytesIO(source) if isinstance(source, bytes) else source
            with Image.open(opened) as image:
                width, height = image.size
                if image.format == "AVIF" and image.getexif().get(_ORIENTATION, 1) in _TURNED:
                    width, height = height, width  # shown turned: irot applied, as libheif does
                tags = getattr(image, "tag_v2", None)
                if image.format == "TIFF" and tags is not None:  # the coded size: Pillow's
                    width, height = tags.get(256, width), tags.get(257, height)  # is turned
                return int(width), int(height)
        except Exception:  # any parser failure on untrusted bytes means "unknown"
            return None


def _be(data: bytes, at: int, size: int) -> int:
    if at + size > len(data):
        raise IndexError("past the bytes read")
    return int.from_bytes(data[at : at + size], "big")


def _le(data: bytes, at: int, size: int) -> int:
    if at + size > len(data):
        raise IndexError("past the bytes read")
    return int.from_bytes(data[at : at + size], "little")
