"""An animated WebP result keeps every frame (``kept_frames``).

libwebp's animation encoder joins a frame equal to the one before it (or, lossy, close
enough) into that frame, its delay added, and offers no option not to; when every frame
is equal it writes a still. A chain that made an animation's frames alike (``blackwhite``
on frames differing only in hue, a coarse ``pixelate``) then gave fewer frames, or a
still without its loop count or duration. The saved file is mended from its chunk
headers, no frame encoded again: each joined frame gets its own delay back and is
followed by one empty frame (a 1x1 transparent pixel blended over the canvas, which
changes nothing) for each frame joined into it, with that frame's delay. A still is
first made the animation's first frame (``VP8X`` and ``ANIM`` written).

A RIFF of chunks (``VP8X`` header, ``ICCP``, ``ANIM``: background and loop count, an
``ANMF`` a frame: 16 bytes of offset, size, duration and flags, then the frame's
``ALPH``/``VP8 `` or ``VP8L`` chunks, then ``EXIF``, ``XMP ``).
"""

from __future__ import annotations

from pathlib import Path

import pyvips

#: A frame that changes nothing: one lossless transparent pixel, blended (its ``VP8L``
#: chunk, made by libwebp once).
_EMPTY: list[bytes] = []
_FLAGS = {"ICCP": 0x20, "ALPH": 0x10, "EXIF": 0x08, "XMP ": 0x04, "ANIM": 0x02}
_NO_BLEND = 0x02


def kept_frames(dest: Path, image: pyvips.Image) -> int:
    """``dest``, the WebP saved from the strip ``image``, rewritten with as many frames
    as the strip has when libwebp joined some (else left as it is); its size in bytes."""
    height = int(image.get("page-height")) if image.get_typeof("page-height") else 0
    if not 0 < height < image.height or image.height % height:
        return dest.stat().st_size
    frames = image.height // height
    delays = list(image.get("delay")) if image.get_typeof("delay") else []
    # libvips' saver: 100 ms where none is given, and for 10 ms or less
    delays = [d if d > 10 else 100 for d in (delays + [100] * frames)[:frames]]
    loop = int(image.get("loop")) if image.get_typeof("loop") else 0
    if _frame_count(dest) == frames:  # the usual case: read 8 bytes a chunk, no more
        return dest.stat().st_size
    data = dest.read_bytes()
    chunks = _chunks(data, 12, len(data))
    found = [payload for name, payload in chunks if name == b"ANMF"]
    if len(found) == frames:
        return len(data)
    if not found:  # a still: its image chunks become the first frame
        image_chunks = b"".join(_chunk(n, p) for n, p in chunks if n in (b"ALPH", b"VP8 ", b"VP8L"))
        found = [_frame_header(0, 0, image.width, height, sum(delays), _NO_BLEND) + image_chunks]
    made = _split(found, delays)
    if made is None:
        return len(data)
    data = _riff(chunks, made, image.width, height, loop)
    dest.write_bytes(data)
    return len(data)


def _split(found: list[bytes], delays: list[int]) -> list[bytes] | None:
    """Each frame found, its duration the first of the delays it holds, then an empty
    frame for each other; None when the durations do not add up to the delays."""
    made, at = [], 0
    for payload in found:
        duration, total = int.from_bytes(payload[12:15], "little"), 0
        start = at
        while at < len(delays) and total < duration:
            total += delays[at]
            at += 1
        if total != duration or at == start:
            return None
        made.append(payload[:12] + delays[start].to_bytes(3, "little") + payload[15:])
        made += [_empty(d) for d in delays[start + 1 : at]]
    return made if at == len(delays) else None


def _empty(duration: int) -> bytes:
    if not _EMPTY:
        still = pyvips.Image.black(1, 1, bands=4).cast("uchar").copy(interpretation="srgb")
        data = still.webpsave_buffer(lossless=True, keep="none")
        _EMPTY.append(
            b"".join(_chunk(n, p) for n, p in _chunks(data, 12, len(data)) if n == b"VP8L")
        )
    return _frame_header(0, 0, 1, 1, duration, 0) + _EMPTY[0]


def _frame_header(x: int, y: int, width: int, height: int, duration: int, flags: int) -> bytes:
    fields = (x // 2, y // 2, width - 1, height - 1, duration)
    return b"".join(v.to_bytes(3, "little") for v in fields) + bytes([flags])


def _riff(
    chunks: list[tuple[bytes, bytes]], frames: list[bytes], width: int, height: int, loop: int
) -> bytes:
    names = {name.decode("latin-1") for name, _ in chunks}
    flags = _FLAGS["ANIM"] | _FLAGS["ALPH"]  # alpha: the empty frames are transparent
    flags |= sum(
        bit for name, bit in _FLAGS.items() if name in names and name in ("ICCP", "EXIF", "XMP ")
    )
    header = (
        bytes([flags, 0, 0, 0])
        + (width - 1).to_bytes(3, "little")
        + (height - 1).to_bytes(3, "little")
    )
    anim = next((p for n, p in chunks if n == b"ANIM"), b"\xff\xff\xff\xff")[:4] + loop.to_bytes(
        2, "little"
    )
    body = _chunk(b"VP8X", header)
    body += b"".join(_chunk(n, p) for n, p in chunks if n == b"ICCP")
    body += _chunk(b"ANIM", anim) + b"".join(_chunk(b"ANMF", f) for f in frames)
    done = (b"VP8X", b"ICCP", b"ANIM", b"ANMF", b"ALPH", b"VP8 ", b"VP8L")
    body += b"".join(_chunk(n, p) for n, p in chunks if n not in done)
    return b"RIFF" + (len(body) + 4).to_bytes(4, "little") + b"WEBP" + body


def _frame_count(path: Path) -> int:
    """The ANMF chunks of the file, found from the chunk headers."""
    count, at, end = 0, 12, path.stat().st_size
    with path.open("rb") as file:
        while at + 8 <= end:
            file.seek(at)
            header = file.read(8)
            size = int.from_bytes(header[4:], "little")
            count += header[:4] == b"ANMF"
            at += 8 + size + (size & 1)
    return count


def _chunks(data: bytes, at: int, end: int) -> list[tuple[bytes, bytes]]:
    found = []
    while at + 8 <= end:
        name, size = data[at : at + 4], int.from_bytes(data[at + 4 : at + 8], "little")
        found.append((name, data[at + 8 : at + 8 + size]))
        at += 8 + size + (size & 1)
    return found


def _chunk(name: bytes, payload: bytes) -> bytes:
    return name + len(payload).to_bytes(4, "little") + payload + b"\0" * (len(payload) & 1)
