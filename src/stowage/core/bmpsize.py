"""BMP and ICO headers: what a file claims before a pixel is read.

A BMP's size is its DIB header's (a negative height: rows stored top-down). An ICO is a
directory of entries, each a PNG or a DIB (its height doubled: the colour rows, then the
AND mask's); the entry shown is the largest, of the most colours among equals (Pillow
shows the fewest; a 32-bit entry is the one with alpha). Its directory's size is one byte
a side (0: 256) and not to be trusted: the real size is its PNG's IHDR or its DIB header's.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

#: The DIB header sizes of BMP files: OS/2 1.x, Windows 3 (INFO), its BITFIELDS variants,
#: OS/2 2.x, V4, V5. A file that starts "BM" with another is no BMP (a text, say).
_DIB_SIZES = {12, 40, 52, 56, 64, 108, 124}
_PNG = b"\x89PNG\r\n\x1a\n"
ICO_SIGNATURE = b"\x00\x00\x01\x00"


def is_bmp(head: bytes) -> bool:
    return head[:2] == b"BM" and len(head) >= 18 and _u32(head, 14) in _DIB_SIZES


def is_ico(head: bytes) -> bool:
    return head[:4] == ICO_SIGNATURE and len(head) >= 6 and _u16(head, 4) > 0


def bmp_size(head: bytes) -> tuple[int, int] | None:
    """A BMP file's width and height from its first 26 bytes, or None."""
    if not is_bmp(head):
        return None
    return dib_size(head[14:])


def dib_size(dib: bytes) -> tuple[int, int] | None:
    """A DIB header's width and height (rows either way up), or None when cut short."""
    if len(dib) < 12:
        return None
    if _u32(dib, 0) == 12:  # OS/2 1.x: 16-bit unsigned sides
        return _u16(dib, 4), _u16(dib, 6)
    width, height = struct.unpack_from("<ii", dib, 4)
    return (width, abs(height)) if width > 0 and height != 0 else None


@dataclass(frozen=True)
class IcoEntry:
    offset: int  # where its PNG or DIB starts in the file
    length: int
    width: int  # as the directory says (0 read as 256)
    height: int
    depth: int  # bits a pixel, as the directory says


def directory_length(head: bytes) -> int:
    """The bytes an ICO's header and directory take (read those, then ``chosen``)."""
    return 6 + 16 * _u16(head, 4)


def chosen(directory: bytes) -> IcoEntry | None:
    """The entry shown of an ICO's directory (its first ``directory_length`` bytes)."""
    if not is_ico(directory) or len(directory) < directory_length(directory):
        return None
    entries = []
    for at in range(6, directory_length(directory), 16):
        width, height, colours, _, _, bits, length, offset = struct.unpack_from(
            "<BBBBHHII", directory, at
        )
        depth = bits or (colours.bit_length() - 1 if colours else 8)
        entries.append(IcoEntry(offset, length, width or 256, height or 256, depth))
    return max(entries, key=lambda e: (e.width * e.height, e.depth))


def entry_size(payload: bytes) -> tuple[int, int] | None:
    """An ICO entry's real width and height from its first 24 bytes: a PNG's IHDR, or
    a DIB header's (half its height: the AND mask's rows follow the colour ones)."""
    if payload.startswith(_PNG):
        if len(payload) < 24 or payload[12:16] != b"IHDR":
            return None
        return struct.unpack_from(">II", payload, 16)
    found = dib_size(payload)
    if found is None or found[1] < 2:
        return None
    return found[0], found[1] // 2


def is_png(payload: bytes) -> bool:
    return payload.startswith(_PNG)


def _u16(data: bytes, at: int) -> int:
    return int(struct.unpack_from("<H", data, at)[0])


def _u32(data: bytes, at: int) -> int:
    return int(struct.unpack_from("<I", data, at)[0])
