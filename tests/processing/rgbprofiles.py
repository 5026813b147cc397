"""RGB display profiles for tests (ICC v2, matrix and gamma curves): Adobe RGB (1998)
and ProPhoto RGB, colorants as their published profiles give them (D50); Display P3 is
libvips' own."""

from __future__ import annotations

import struct

import numpy as np
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


def colorants(data: bytes) -> np.ndarray:
    """A matrix profile's ``rXYZ``, ``gXYZ`` and ``bXYZ`` tags as columns: its linear RGB
    to the connection space's XYZ (D50, adapted)."""
    count = struct.unpack(">I", data[128:132])[0]
    tags = {}
    for n in range(count):
        sig, offset, size = struct.unpack(">4sII", data[132 + 12 * n : 144 + 12 * n])
        tags[sig] = data[offset : offset + size]
    columns = [struct.unpack(">3i", tags[t][8:20]) for t in (b"rXYZ", b"gXYZ", b"bXYZ")]
    return np.array(columns, dtype=float).T / 65536


def to_srgb(data: bytes) -> np.ndarray:
    """The profile ``data``'s linear RGB to linear sRGB (libvips' sRGB profile), from both
    profiles' colorants: what a colour-managed viewer computes, in floats."""
    black = pyvips.Image.black(1, 1, bands=3).copy(interpretation="srgb")
    srgb = bytes(black.icc_export(output_profile="srgb").get("icc-profile-data"))
    return np.linalg.inv(colorants(srgb)) @ colorants(data)


def srgb_linear(values: np.ndarray) -> np.ndarray:
    """sRGB's curve (Display P3's too) from 0..1 levels to linear light."""
    return np.where(values <= 0.04045, values / 12.92, ((values + 0.055) / 1.055) ** 2.4)


def srgb_encoded(linear: np.ndarray) -> np.ndarray:
    """Linear light to sRGB's 0..1 levels, clipped: sRGB shows nothing outside them."""
    linear = np.clip(linear, 0, 1)
    return np.where(linear <= 0.0031308, linear * 12.92, 1.055 * linear ** (1 / 2.4) - 0.055)


def linear(name: str, levels: np.ndarray) -> np.ndarray:
    """``levels`` (0..1) of the profile ``name`` as linear light, by its curve (a gamma
    as the profile holds it: in 256ths)."""
    return (
        srgb_linear(levels) if name == "p3" else levels ** (round(RGB_SPACES[name][0] * 256) / 256)
    )
