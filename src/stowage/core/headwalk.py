"""An image's size from header parts past its first bytes, read where they lie: nothing
between them is read, no pixel decoded. For ``core/imagesize.py``, on the local disk (a
seek and a small read) and in a remote store (a ranged read).

- A JPEG's frame header follows its Exif, ICC and XMP segments, which can take megabytes
  (a Google Camera portrait's extended XMP holds its depth map): the walk goes on from
  segment header to segment header, their bodies skipped.
- A TIFF's first directory (its width and length tags) is where the header's offset says:
  libtiff writes it after the pixels, so past the first MiB of any TIFF larger than that.
  Classic TIFF and BigTIFF.
- An ICO's size is the header (PNG IHDR or DIB) of the entry it shows, wherever its
  directory says that entry lies: past the first MiB when the entries before it fill it.

Each walk is a generator: it yields ``(offset, least, most)``, the bytes it needs next
(at least ``least`` of them, at most ``most`` of use), is sent them, and returns the
size or None.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Literal

from stowage.core import bmpsize

Walk = Generator[tuple[int, int, int], bytes, tuple[int, int] | None]
Size = tuple[int, int] | None
Reader = Callable[[int, int, int], bytes]  # (offset, least, most) -> the bytes there

#: How far into a JPEG its frame header is looked for, and in how many reads at most (a
#: file of fill bytes or of empty segments advances a few bytes a read): twice the
#: segments of 64 KiB that fill that far.
JPEG_WALK_BYTES = 64 << 20
WALK_STEPS = 2048
#: A segment's header: its marker, its length; a frame's sizes.
MARKER_BYTES = 16
WINDOW = 1 << 20  # what a remote read brings at most
#: A TIFF directory read at once: its count and 5,000 entries of 12 bytes (20 in BigTIFF).
DIRECTORY_BYTES = 64 * 1024
#: How far into an ICO the header of the entry it shows is followed (its directory, at
#: most 65535 entries, 1 MiB, is read whole first): as far as a JPEG's frame header.
ICO_WALK_BYTES = JPEG_WALK_BYTES
ICO_ENTRY_BYTES = 24  # a PNG's signature and IHDR, or a DIB header's sides
#: JPEG start-of-frame markers (baseline, progressive, lossless, arithmetic): their
#: segment holds the size. Not C4 (Huffman tables), C8 (reserved), CC (arithmetic).
SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}
_NO_LENGTH = {0x01, *range(0xD0, 0xD8)}  # standalone markers: no length follows
_ORDER: dict[bytes, Literal["little", "big"]] = {b"II": "little", b"MM": "big"}
#: TIFF field types whose value is a whole number, and their size in bytes.
_WHOLE = {3: 2, 4: 4, 16: 8}  # SHORT, LONG, LONG8 (BigTIFF)


def further(head: bytes) -> Walk:
    """The walk for the file that starts with ``head`` (of which nothing told the size):
    a JPEG's, a TIFF's or an ICO's; for any other file, none (it returns None at once)."""
    if head.startswith(b"\xff\xd8"):
        return _jpeg_further(head)
    if head[:2] in _ORDER:
        return _tiff_directory(head)
    if bmpsize.is_ico(head):
        return _ico_entry(head)
    return _nothing()


def walked(walk: Walk, read: Reader) -> Size:
    """The size ``walk`` finds, given what it asks by ``read(offset, least, most)``;
    None when a directory or segment on the way is damaged."""
    try:
        step = next(walk)
        while True:
            step = walk.send(read(*step))
    except StopIteration as done:
        found: Size = done.value
        return found
    except (IndexError, ValueError):
        return None


async def walked_remote(walk: Walk, read: Callable[[int, int, int], Awaitable[bytes]]) -> Size:
    """``walked`` with a read that waits (a ranged read of a remote store)."""
    try:
        step = next(walk)
        while True:
            step = walk.send(await read(*step))
    except StopIteration as done:
        found: Size = done.value
        return found
    except (IndexError, ValueError):
        return None


def jpeg_walk(data: bytes, base: int, at: int) -> tuple[tuple[int, int] | None, int | None]:
    """Walks a JPEG's markers in ``data`` (its bytes from offset ``base``) from offset
    ``at``: (the frame's size, None) when its frame header is found; (None, None) when
    none will come (damage, the scan, the end); (None, offset) when the walk goes on
    past ``data``, from that offset of the file."""
    i = at - base
    while i + 4 <= len(data):
        if data[i] != 0xFF:
            return None, None  # not at a marker: a damaged file
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte before a marker
            i += 1
            continue
        if marker in SOF:
            if i + 9 > len(data):
                break
            return (_int(data, i + 7, 2, "big"), _int(data, i + 5, 2, "big")), None
        if marker in (0xD9, 0xDA):  # end of image, or the scan: no frame header came
            return None, None
        i += 2 if marker in _NO_LENGTH else 2 + _int(data, i + 2, 2, "big")
    return None, base + i


def _jpeg_further(head: bytes) -> Walk:
    found, at = jpeg_walk(head, 0, 2)
    if found is not None:
        return None  # in the head: read there
    for _ in range(WALK_STEPS):
        if at is None or at >= JPEG_WALK_BYTES:
            return None
        data = yield at, MARKER_BYTES, WINDOW
        found, further_at = jpeg_walk(data, at, at)
        if found is not None:
            return found if min(found) > 0 else None
        if further_at is None or further_at <= at or len(data) < 4:  # no frame, no progress
            return None
        at = further_at
    return None


def _tiff_directory(head: bytes) -> Walk:
    """The first directory's ImageWidth (256) and ImageLength (257): the coded size, as
    libvips reads it (an orientation tag not applied)."""
    order = _ORDER[head[:2]]
    if len(head) < 16:
        return None
    magic = _int(head, 2, 2, order)
    if magic == 42:  # classic: a 4-byte offset, 2-byte count, 12-byte entries
        at, count_size, entry_size = _int(head, 4, 4, order), 2, 12
    elif magic == 43:  # BigTIFF: an 8-byte offset, 8-byte count, 20-byte entries
        at, count_size, entry_size = _int(head, 8, 8, order), 8, 20
    else:
        return None
    if at + DIRECTORY_BYTES <= len(head):
        data = head[at : at + DIRECTORY_BYTES]
    else:
        data = yield at, DIRECTORY_BYTES, DIRECTORY_BYTES
    if len(data) < count_size:
        return None
    count = _int(data, 0, count_size, order)
    sides: dict[int, int] = {}
    for i in range(min(count, (len(data) - count_size) // entry_size)):
        entry = count_size + i * entry_size
        tag, kind = _int(data, entry, 2, order), _int(data, entry + 2, 2, order)
        if tag in (256, 257) and kind in _WHOLE:
            sides[tag] = _int(data, entry + entry_size // 2 + 2, _WHOLE[kind], order)
    width, height = sides.get(256, 0), sides.get(257, 0)
    return (width, height) if width > 0 and height > 0 else None


def _ico_entry(head: bytes) -> Walk:
    """The size in the header of the entry an ICO shows (``bmpsize.chosen``): its
    directory from the head or read whole, then the entry's first bytes where it lies."""
    length = bmpsize.directory_length(head)
    directory = head if len(head) >= length else (yield 0, length, length)
    entry = bmpsize.chosen(directory)
    if entry is None or entry.offset + ICO_ENTRY_BYTES > ICO_WALK_BYTES:
        return None
    end = entry.offset + ICO_ENTRY_BYTES
    if end <= len(head):
        return bmpsize.entry_size(head[entry.offset : end])
    payload = yield entry.offset, ICO_ENTRY_BYTES, ICO_ENTRY_BYTES
    return bmpsize.entry_size(payload)


def _nothing() -> Walk:
    return None
    yield 0, 0, 0  # a generator that ends at once


def _int(data: bytes, at: int, size: int, order: Literal["little", "big"]) -> int:
    if at + size > len(data):
        raise IndexError("past the bytes read")
    return int.from_bytes(data[at : at + size], order)
