"""BMP and ICO files of every common variant, made byte by byte from random pixels (Pillow
saves few of them: no RLE, no 16-bit, no BITFIELDS alpha, no top-down rows)."""

from __future__ import annotations

import io
import random
import struct

from PIL import Image

#: (name, bits a pixel, compression): 0 BI_RGB, 1 RLE8, 2 RLE4, 3 BITFIELDS.
BMP_VARIANTS = [
    ("pal1", 1, 0),
    ("pal4", 4, 0),
    ("pal8", 8, 0),
    ("rle4", 4, 2),
    ("rle8", 8, 1),
    ("rgb555", 16, 0),
    ("rgb565", 16, 3),
    ("rgb24", 24, 0),
    ("rgbx32", 32, 0),
    ("argb32-v4", 32, 3),
    ("argb32-v5", 32, 3),
]


def bmp(name: str, width: int, height: int, rng: random.Random, top_down: bool = False) -> bytes:
    """A BMP of variant ``name`` with random pixels (palette indices drawn in runs, so RLE
    has runs to encode), its rows stored top-down when asked (not for RLE)."""
    _, bits, compression = next(v for v in BMP_VARIANTS if v[0] == name)
    rows = [[_pixel(bits, rng) for _ in range(width)] for _ in range(height)]
    if bits <= 8:  # runs of indices
        rows = [[row[x - x % 3] for x in range(width)] for row in rows]
    palette = (
        [tuple(rng.randrange(256) for _ in range(3)) for _ in range(1 << bits)] if bits <= 8 else []
    )
    stored = rows if top_down else rows[::-1]
    if compression in (1, 2):
        data = _rle(stored, bits)
    else:
        data = b"".join(_row(row, bits, name) for row in stored)
    header_size = {"argb32-v4": 108, "argb32-v5": 124}.get(name, 40)
    masks = b""
    if name == "rgb565":
        masks = struct.pack("<III", 0xF800, 0x07E0, 0x001F)
    info = struct.pack(
        "<IiiHHIIiiII",
        header_size,
        width,
        -height if top_down else height,
        1,
        bits,
        compression,
        len(data),
        2835,
        2835,
        len(palette),
        0,
    )
    if header_size > 40:  # V4/V5: the masks, alpha included, then colour space fields
        extra = struct.pack("<IIII", 0x00FF0000, 0x0000FF00, 0x000000FF, 0xFF000000)
        extra += b"BGRs" + bytes(36 + 12)
        if header_size == 124:
            extra += struct.pack("<IIII", 4, 0, 0, 0)  # intent, no profile
        info += extra
    table = b"".join(bytes((b, g, r, 0)) for r, g, b in palette)
    offset = 14 + len(info) + len(masks) + len(table)
    head = b"BM" + struct.pack("<IHHI", offset + len(data), 0, 0, offset)
    return head + info + masks + table + data


def expected(data: bytes) -> Image.Image:
    """Pillow's own decode of a BMP or ICO (an ICO's largest entry), as RGBA."""
    image = Image.open(io.BytesIO(data))
    if image.format == "ICO":
        largest = max(image.info["sizes"], key=lambda s: s[0] * s[1])
        image.size = largest
    return image.convert("RGBA")


def ico(rng: random.Random, sides: list[int], png_entry: bool) -> bytes:
    """An ICO of square entries of ``sides`` (random pixels with alpha), the largest as
    a PNG when ``png_entry``, the others as 32-bit DIBs."""
    entries = []
    for side in sides:
        image = Image.frombytes("RGBA", (side, side), rng.randbytes(side * side * 4))
        if png_entry and side == max(sides):
            out = io.BytesIO()
            image.save(out, "PNG")
            entries.append((side, 32, out.getvalue()))
        else:
            entries.append((side, 32, _dib32(image)))
    head = struct.pack("<HHH", 0, 1, len(entries))
    offset = 6 + 16 * len(entries)
    directory, bodies = b"", b""
    for side, bits, body in entries:
        directory += struct.pack(
            "<BBBBHHII", side % 256, side % 256, 0, 0, 1, bits, len(body), offset + len(bodies)
        )
        bodies += body
    return head + directory + bodies


def _dib32(image: Image.Image) -> bytes:
    width, height = image.size
    info = struct.pack("<IiiHHIIiiII", 40, width, height * 2, 1, 32, 0, 0, 0, 0, 0, 0)
    r, g, b, a = image.split()
    pixels = Image.merge("RGBA", (b, g, r, a)).transpose(Image.Transpose.FLIP_TOP_BOTTOM)
    mask_row = ((width + 31) // 32) * 4
    return info + pixels.tobytes() + bytes(mask_row * height)


def _pixel(bits: int, rng: random.Random) -> int:
    return rng.randrange(1 << min(bits, 32)) if bits <= 8 else rng.getrandbits(32)


def _row(row: list[int], bits: int, name: str) -> bytes:
    if bits <= 8:
        value = 0
        for index in row:
            value = (value << bits) | index
        pad = (-len(row) * bits) % 8
        raw = (value << pad).to_bytes((len(row) * bits + pad) // 8, "big")
    elif bits == 16:
        mask = 0xFFFF if name == "rgb565" else 0x7FFF
        raw = b"".join(struct.pack("<H", p & mask) for p in row)
    elif bits == 24:
        raw = b"".join(struct.pack("<I", p)[:3] for p in row)
    else:
        alpha = name.startswith("argb")
        raw = b"".join(struct.pack("<I", p if alpha else p & 0xFFFFFF) for p in row)
    return raw + bytes(-len(raw) % 4)


def _rle(rows: list[list[int]], bits: int) -> bytes:
    """Runs (count, index) of each row, absolute runs for mixed stretches of RLE8, an end
    of line after each row and the end of the bitmap."""
    out = bytearray()
    for row in rows:
        x = 0
        while x < len(row):
            run = 1
            while x + run < len(row) and row[x + run] == row[x] and run < 255:
                run += 1
            if bits == 8 and run == 1 and len(row) - x >= 3 and row[x + 1] != row[x + 2]:
                mixed = row[x : x + 3]
                out += bytes((0, 3, *mixed, 0))  # absolute: 3 indices, padded to a word
                x += 3
                continue
            value = row[x] if bits == 8 else (row[x] << 4) | row[x]
            out += bytes((run, value))
            x += run
        out += b"\x00\x00"
    return bytes(out + b"\x00\x01")


def far_ico(
    rng: random.Random, claimed: tuple[int, int], entries: int, pad: int, png: bool
) -> bytes:
    """An ICO of ``entries`` directory entries whose shown one (256x256 in the directory,
    the others 16x16, at a random place in it) has a PNG IHDR or DIB header claiming
    ``claimed`` and lies ``pad`` bytes past the others' one small DIB: past the first page,
    128 KiB or a MiB as ``entries`` and ``pad`` make it. Headers only: nothing to decode."""
    width, height = claimed
    small = struct.pack("<IiiHHIIiiII", 40, 16, 32, 1, 32, 0, 0, 0, 0, 0, 0) + bytes(1088)
    if png:
        ihdr = b"IHDR" + struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
        shown = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + ihdr + bytes(4)
    else:
        shown = struct.pack("<IiiHHIIiiII", 40, width, 2 * height, 1, 32, 0, 0, 0, 0, 0, 0)
    start = 6 + 16 * entries
    far = start + len(small) + pad
    at = rng.randrange(entries)
    directory = b"".join(
        struct.pack("<BBBBHHII", 0, 0, 0, 0, 1, 32, len(shown), far)
        if i == at
        else struct.pack("<BBBBHHII", 16, 16, 0, 0, 1, 32, len(small), start)
        for i in range(entries)
    )
    filler = rng.randbytes(pad)
    return struct.pack("<HHH", 0, 1, entries) + directory + small + filler + shown
