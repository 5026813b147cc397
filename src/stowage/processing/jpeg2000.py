"""JPEG 2000 sources, decoded by Pillow (OpenJPEG) in the job process
(``pillowformats.decoded``): their signature, and the metadata Pillow does not read.

The libvips of the ``pyvips-binary`` wheel has no JPEG 2000 loader (nor a JPEG XL one):
a ``.jp2`` answered ``415 NOT_AN_IMAGE`` to every task while the File API read its size
through Pillow. Here a JPEG 2000 file (recognised by its signature, not its name) has its
size read from its header and held to the pixel limits before a pixel is decoded (the
chain's other limits too, and ``imagesize`` alone answered from it: ``jp2header.py``);
then it is decoded whole and written beside the job's result as an uncompressed TIFF,
which the engine opens in its place (removed when the job is done), with the file's ICC
profile and XMP, which Pillow does not read (``metadata``). JPEG XL has no decoder
here: it stays ``415 NOT_AN_IMAGE``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from stowage.core import filetypes


def is_jpeg2000(source: Path) -> bool:
    with source.open("rb") as file:
        head = file.read(12)
    return filetypes.sniff(head) == "image/jp2"  # a JP2 box, or a bare codestream


#: Boxes read whole at most: a header box (``jp2h``, with ``ihdr`` and ``colr``), an
#: ICC profile, an XMP packet. A larger one is not read (its metadata is lost, no more).
_MAX_BOX = 4 << 20
_XMP_TAG = 700  # TIFF's XMLPacket
#: ``xml `` boxes of XMP are often this UUID box instead (ISO 15444-1 annex I.7.3).
_XMP_UUID = bytes.fromhex("be7acfcb97a942e89c71999491e3afac")


def metadata(source: Path) -> dict[str, Any]:
    """The JP2 file's ICC profile (``colr`` method 2 or 3: Pillow does not read it) and
    XMP, as Pillow's TIFF saver takes them: libvips then reads them from the TIFF as from
    any source (its colour handling, what a result keeps). A bare codestream has none; an
    enumerated ``colr`` (sRGB, grey, sYCC) needs no profile."""
    saved: dict[str, Any] = {}
    with source.open("rb") as file:
        for kind, body in _boxes(file, source.stat().st_size):
            if kind == b"jp2h":
                icc = _icc(body)
                if icc:
                    saved["icc_profile"] = icc
            elif kind == b"xml " and b"xmpmeta" in body[:4096] and "tiffinfo" not in saved:
                saved["tiffinfo"] = {_XMP_TAG: body}
            elif kind == b"uuid" and body.startswith(_XMP_UUID) and "tiffinfo" not in saved:
                saved["tiffinfo"] = {_XMP_TAG: body[len(_XMP_UUID) :]}
    return saved


def _boxes(file: BinaryIO, end: int) -> Iterator[tuple[bytes, bytes]]:
    """The top-level boxes of a JP2 file, each its type and (for those read) its body:
    length (4 bytes; 1: an 8-byte length follows; 0: to the end) and type (4 bytes)."""
    at = 0
    while at + 8 <= end:
        file.seek(at)
        length, kind = struct.unpack(">I4s", file.read(8))
        header = 8
        if length == 1:
            (length,) = struct.unpack(">Q", file.read(8))
            header = 16
        elif length == 0:
            length = end - at
        if length < header or at + length > end:
            return
        wanted = kind in (b"jp2h", b"xml ", b"uuid") and length - header <= _MAX_BOX
        yield kind, file.read(length - header) if wanted else b""
        at += length


def _icc(header: bytes) -> bytes | None:
    """The ICC profile of the first ``colr`` box in ``jp2h``'s body (the one that
    applies), when it holds one (method 2, restricted ICC; 3, any ICC)."""
    at = 0
    while at + 8 <= len(header):
        length, kind = struct.unpack_from(">I4s", header, at)
        if length < 8 or at + length > len(header):
            return None
        if kind == b"colr":
            body = header[at + 8 : at + length]
            return body[3:] if len(body) > 3 and body[0] in (2, 3) else None
        at += length
    return None
