"""RGB display profiles for tests (ICC v2, matrix and gamma curves): Adobe RGB (1998)
and ProPhoto RGB, colorants as their published profiles give them (D50); Display P3 is
libvips' own."""

from __future__ import annotations

import struct

import pyvips

from tests.processing.test_grey_placed import D50

#: Each: gamma, and the red, green and blue colorants (XYZ, D50).
RGB_SPACES = {
    "adobe": (
        563 / 256,
        ((0.6097, 0.3111, 0.0195), (0.2053, 0.6257, 0.0609), (0.1492, 0.0632, 0.7446)),
    ),
    "prophoto": (1.8, ((0.7977, 0.2880, 0.0), (0.1352, 0.7119, 0.0), (0.0313, 0.0001, 0.8251))),
}


def _fixed(*values: float) -> bytes:
    return b"".join(struct.pack(">i", round(v * 65536)) for v in values)


def rgb_profile(name: str) -> bytes:
    """The ICC profile of ``name``: ``p3`` (libvips'), ``adobe`` or ``prophoto``."""
    if name == "p3":
        black = pyvips.Image.black(1, 1, bands=3).copy(interpretation="srgb")
        return bytes(black.icc_export(output_profile="p3").get("icc-profile-data"))
    gamma, colorants = RGB_SPACES[name]
    text = name.encode() + b"\0"
    curve = b"curv\0\0\0\0" + struct.pack(">IH", 1, round(gamma * 256)) + bytes(2)
    tags = {
        b"desc": b"desc\0\0\0\0" + struct.pack(">I", len(text)) + text + bytes(78),
        b"wtpt": b"XYZ \0\0\0\0" + _fixed(*D50),
        b"rXYZ": b"XYZ \0\0\0\0" + _fixed(*colorants[0]),
        b"gXYZ": b"XYZ \0\0\0\0" + _fixed(*colorants[1]),
        b"bXYZ": b"XYZ \0\0\0\0" + _fixed(*colorants[2]),
        b"rTRC": curve,
        b"gTRC": curve,
        b"bTRC": curve,
        b"cprt": b"text\0\0\0\0none\0",
    }
    offset, table, data = 128 + 4 + 12 * len(tags), b"", b""
    for tag, body in tags.items():
        data += bytes(-(offset + len(data)) % 4)
        table += tag + struct.pack(">II", offset + len(data), len(body))
        data += body
    head = b"lcms" + bytes([2, 0x10, 0, 0]) + b"mntrRGB XYZ " + bytes(12) + b"acspAPPL"
    head += bytes(24) + _fixed(*D50) + bytes(48)
    return (
        struct.pack(">I", offset + len(data)) + head + struct.pack(">I", len(tags)) + table + data
    )
