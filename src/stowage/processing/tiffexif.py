"""A TIFF result's Exif, which libvips' TIFF saver does not write (it keeps XMP, IPTC and
an ICC profile, and dropped a source's Exif on every source).

After the save, the source's Exif (``exif-data``, as libvips holds it for any result)
is added to the file: its main tags (camera, dates, ...) that the TIFF does not hold
already, beside its Exif and GPS directories, which the TIFF's first directory points
to. The first directory is written again at the end of the file with those entries
(each entry as libvips wrote it, its data where it was), and the header points to it;
the old one stays unread. The Exif pixel size is the result's, as libvips sets it for
the other formats. A TIFF of several directories (none is made here) is left as it is.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any, BinaryIO

import pyvips
from PIL import Image, TiffImagePlugin, TiffTags

_EXIF_IFD, _GPS_IFD, _INTEROP_IFD = 0x8769, 0x8825, 0xA005
_PIXEL_X, _PIXEL_Y = 0xA002, 0xA003
#: Tags of the main directory that describe the picture as stored, its metadata blocks,
#: or other directories: libvips' own, never the source's.
_STRUCTURE = frozenset(
    {254, 255, 256, 257, 258, 259, 262, 266, 273, 274, 277, 278, 279, 280, 281, 282, 283}
    | {284, 296, 305, 317, 320, 322, 323, 324, 325, 330, 338, 339, 340, 341, 513, 514}
    | {529, 530, 531, 532, 700, 33723, 34377, 34675, _EXIF_IFD, _GPS_IFD, _INTEROP_IFD}
)


def saved(image: pyvips.Image, dest: Path, options: dict[str, Any]) -> None:
    """``image`` saved as a TIFF in ``dest`` with libvips' ``options``, and its Exif when
    ``options["keep"]`` keeps Exif."""
    image.tiffsave(str(dest), **options)
    keep = str(options.get("keep", "all")).split(",")
    if image.get_typeof("exif-data") and ("exif" in keep or "all" in keep):
        add(dest, image.get("exif-data"), image.width, image.height)


def add(dest: Path, exif_data: bytes, width: int, height: int) -> None:
    """The Exif ``exif_data`` (libvips' ``exif-data``: ``Exif\\0\\0`` and a TIFF
    structure) added to the TIFF file ``dest`` of ``width`` x ``height``."""
    exif = Image.Exif()
    try:
        exif.load(exif_data)
        main = {t: v for t, v in exif.items() if t not in _STRUCTURE}
        sub = {t: v for t, v in exif.get_ifd(_EXIF_IFD).items() if t != _INTEROP_IFD}
        gps = dict(exif.get_ifd(_GPS_IFD))
    except (OSError, ValueError, SyntaxError, struct.error):
        return  # an Exif block libvips kept but that cannot be read: left out
    with dest.open("r+b") as file:
        head = file.read(8)
        if head[:4] not in (b"II*\0", b"MM\0*"):
            return  # BigTIFF: not written here
        order = "<" if head[:2] == b"II" else ">"
        first = struct.unpack(order + "L", head[4:])[0]
        entries, following = _entries(file, order, first)
        if following:
            return
        held = {struct.unpack(order + "H", e[:2])[0] for e in entries}
        extra = TiffImagePlugin.ImageFileDirectory_v2(head)
        for tag, value in main.items():
            if tag not in held:
                extra[tag] = value
        sub[_PIXEL_X], sub[_PIXEL_Y] = width, height
        for tag, found in ((_EXIF_IFD, sub), (_GPS_IFD, gps)):
            if found:
                extra[tag] = found
                extra.tagtype[tag] = TiffTags.LONG  # a directory: Pillow writes it so
        at = _end(file)
        written = extra.tobytes(at)
        file.write(written)
        count = struct.unpack(order + "H", written[:2])[0]
        added = [written[2 + 12 * i : 14 + 12 * i] for i in range(count)]
        merged = sorted(entries + added, key=lambda e: struct.unpack(order + "H", e[:2])[0])
        at = _end(file)
        file.write(struct.pack(order + "H", len(merged)) + b"".join(merged) + bytes(4))
        file.seek(4)
        file.write(struct.pack(order + "L", at))


def _entries(file: BinaryIO, order: str, at: int) -> tuple[list[bytes], int]:
    """The raw 12-byte entries of the directory at ``at``, and the next one's offset."""
    file.seek(at)
    (count,) = struct.unpack(order + "H", file.read(2))
    raw = file.read(12 * count + 4)
    entries = [raw[12 * i : 12 * i + 12] for i in range(count)]
    return entries, struct.unpack(order + "L", raw[-4:])[0]


def _end(file: BinaryIO) -> int:
    """The end of the file, padded to a word (TIFF offsets are even)."""
    at = file.seek(0, 2)
    if at % 2:
        file.write(b"\0")
        at += 1
    return at
