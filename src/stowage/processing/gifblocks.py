"""A GIF's blocks read from its bytes, no pixel decoded: which frames carry a Graphic
Control Extension (their delay, disposal and transparency), and a saved GIF's frames
given the transparent index that the frames after them need.

Two things libvips does not do as the GIF89a specification reads:

- its loader reports 100 ms for a frame without a Graphic Control Extension, which has
  no delay by the specification (0, as an explicit delay of 0 is); ``delays`` reads which
  frames lack one, and the engine keeps 0 for them (docs/decisions.md).
- its saver (cgif) gives an opaque frame followed by a frame with transparent pixels the
  disposal "restore to background" and no transparent index: libvips, Pillow and ffmpeg
  then fill that frame's area with the logical screen's background colour, and the next
  frame's transparent pixels showed that colour, opaque (browsers clear it to
  transparent). ``clear_disposals`` gives such a frame a transparent index no pixel of it
  uses, so every decoder restores the area to transparent.
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass
from pathlib import Path

_EXTENSION, _IMAGE, _TRAILER, _CONTROL = 0x21, 0x2C, 0x3B, 0xF9
_RESTORE_BACKGROUND = 2
#: libvips quantises a frame to 255 colours at most, "so there is always one index free
#: for transparency" (cgifsave.c): in a table of 256 entries index 255 is never a pixel's.
_FREE_IN_FULL_TABLE = 255
#: A GIF's bytes: in memory, or a file mapped (a source is read where it lies).
Data = bytes | mmap.mmap


@dataclass
class Frame:
    control: int | None  # offset of the Graphic Control Extension's packed byte
    descriptor: int  # offset of the image descriptor's packed byte
    table: int | None  # offset of the local colour table, None: the global one
    pixels: int = 0  # of the frame's rectangle
    coded: int = 0  # bytes of its LZW data


@dataclass
class Blocks:
    screen_table: int | None  # offset of the global colour table
    frames: list[Frame]


def read(data: Data) -> Blocks | None:
    """The frames of the GIF ``data`` (None for bytes that are no well-formed GIF)."""
    try:
        return _read(data)
    except IndexError:
        return None


def _read(data: Data) -> Blocks | None:
    if data[:6] not in (b"GIF87a", b"GIF89a"):
        return None
    at = 13
    screen_table = at if data[10] & 0x80 else None
    at += _table_bytes(data[10])
    frames: list[Frame] = []
    control: int | None = None
    while True:
        kind = data[at]
        if kind == _TRAILER:
            return Blocks(screen_table, frames)
        if kind == _EXTENSION:
            if data[at + 1] == _CONTROL and data[at + 2] >= 4:
                control = at + 3
            at = _skip_sub_blocks(data, at + 2)
        elif kind == _IMAGE:
            packed = at + 9
            table = packed + 1 if data[packed] & 0x80 else None
            pixels = _word(data, at + 5) * _word(data, at + 7)
            start = packed + 1 + _table_bytes(data[packed]) + 1  # after the LZW code size
            end = _skip_sub_blocks(data, start)
            frames.append(Frame(control, packed, table, pixels, end - start))
            control = None
            at = end
        else:
            return None if not frames else Blocks(screen_table, frames)


def _word(data: Data, at: int) -> int:
    return int(data[at]) | int(data[at + 1]) << 8


def coded_density(path: Path) -> float | None:
    """Bytes of LZW data a pixel in the densest of the GIF's large frames (a sixteenth of
    the largest or more: a small frame's few bytes are mostly codes' overhead), None for
    a file that is no well-formed GIF. A GIF's frames code as densely as their colours
    are irregular: flat drawings and screen captures 0.02, video 0.1-0.5, dithered
    photos 0.8, noise 1.4. The densest, not the mean: a frame that repeats the one before
    but a small part is coded as that part, yet saved again whole."""
    try:
        with path.open("rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
            blocks = read(data)
    except (OSError, ValueError):  # an empty file cannot be mapped
        return None
    if blocks is None or not blocks.frames:
        return None
    largest = max(frame.pixels for frame in blocks.frames)
    large = [f for f in blocks.frames if f.pixels * 16 >= largest and f.pixels]
    return max((f.coded / f.pixels for f in large), default=None)


def _table_bytes(packed: int) -> int:
    return 3 << ((packed & 7) + 1) if packed & 0x80 else 0


def _skip_sub_blocks(data: Data, at: int) -> int:
    while data[at]:
        at += data[at] + 1
    if at >= len(data):
        raise IndexError(at)
    return at + 1


def delays(path: Path) -> list[int | None] | None:
    """Each frame's delay in ms, None for a frame without a Graphic Control Extension;
    None for a file that is no well-formed GIF."""
    with path.open("rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
        blocks = read(data)
        if blocks is None:
            return None
        return [None if f.control is None else _delay(data, f.control) for f in blocks.frames]


def _delay(data: Data, control: int) -> int:
    return int.from_bytes(data[control + 1 : control + 3], "little") * 10


def mend(path: Path) -> None:
    """``clear_disposals`` of the GIF at ``path``, in place: its blocks are read where
    they lie, and the file is read whole and written again only when a frame needs it."""
    with path.open("rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
        mended = _cleared(data)
    if mended is not None:
        path.write_bytes(mended)


def clear_disposals(data: bytes) -> bytes:
    """``data`` with a transparent index on every frame restored to the background that
    has none: an index of its colour table no pixel of it uses (255 of a full table, else
    the first entry of its table doubled; the LZW code size is kept, which still covers
    every index the pixels use)."""
    mended = _cleared(data)
    return data if mended is None else mended


def _cleared(data: Data) -> bytes | None:
    """``clear_disposals``' bytes; None when no frame needs a transparent index."""
    blocks = read(data)
    if blocks is None:
        return None
    todo = [f for f in blocks.frames if f.control is not None and _opaque_restored(data[f.control])]
    if not todo:
        return None
    out = bytearray(data)
    grown: dict[int, int] = {}  # table offset -> entries added there
    for frame in todo:
        packed_at = frame.descriptor if frame.table is not None else 10
        entries = 2 << (data[packed_at] & 7)
        table = frame.table if frame.table is not None else blocks.screen_table
        if table is None:
            continue  # no colour table at all: no index to give
        free = _FREE_IN_FULL_TABLE if entries == 256 else entries
        if entries < 256 and table not in grown:
            grown[table] = entries
        assert frame.control is not None
        out[frame.control] |= 1
        out[frame.control + 3] = free
    for table in sorted(grown, reverse=True):  # from the end: earlier offsets hold
        entries = grown[table]
        packed_at = 10 if table == blocks.screen_table else table - 1
        out[packed_at] += 1  # the table's size bits: twice the entries
        at = table + 3 * entries
        out[at:at] = bytes(3 * entries)
    return bytes(out)


def _opaque_restored(packed: int) -> bool:
    return (packed >> 2) & 7 == _RESTORE_BACKGROUND and not packed & 1


def grey_tables(path: Path) -> bool:
    """Whether every colour of the GIF at ``path`` is a grey: each entry of its colour
    tables, the transparent ones aside (never seen). False for no well-formed GIF."""
    with path.open("rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
        blocks = read(data)
        if blocks is None or not blocks.frames:
            return False
        clear: dict[int, set[int]] = {}  # table offset -> transparent indexes
        for frame in blocks.frames:
            table = frame.table if frame.table is not None else blocks.screen_table
            if table is None:
                return False  # no table: the decoder's default colours
            hidden = clear.setdefault(table, set())
            if frame.control is not None and data[frame.control] & 1:
                hidden.add(data[frame.control + 3])
        return all(_grey_table(data, blocks, table, hidden) for table, hidden in clear.items())


def _grey_table(data: Data, blocks: Blocks, table: int, hidden: set[int]) -> bool:
    packed = data[10] if table == blocks.screen_table else data[table - 1]
    entries = data[table : table + _table_bytes(packed)]
    return all(
        entries[i] == entries[i + 1] == entries[i + 2]
        for i in range(0, len(entries) - 2, 3)
        if i // 3 not in hidden
    )
