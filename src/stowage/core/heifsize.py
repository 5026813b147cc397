"""The size a HEIF file (HEIC, AVIF) shows, from its boxes: no pixel decoded, no decoder.

A HEIF file names its primary image (``pitm``) and gives every image its properties by
index (``ipma`` into ``ipco``): the spatial extent (``ispe``: width and height) and a turn
(``irot``: a quarter turn swaps them, as libheif applies it on load). The HEIC decoder
(HEVC) is not in the image engine here, and Pillow reads no HEIC: these boxes are the only
way to tell a HEIC photo's size. A grid image's own ``ispe`` is the whole picture's size.
"""

from __future__ import annotations

from collections.abc import Iterator

_Box = tuple[bytes, int, int]  # type, where its content starts, where it ends
_FULL_BOX = 4  # version and flags


def shown_size(head: bytes) -> tuple[int, int] | None:
    """(width, height) of the primary image of the HEIF file starting with ``head``, turned
    as it is shown; None when its boxes are not all within ``head``."""
    meta = _child(_boxes(head, 0, len(head)), b"meta")
    if meta is None:
        return None
    children = list(_boxes(head, meta[1] + _FULL_BOX, meta[2]))
    pitm, iprp = _child(children, b"pitm"), _child(children, b"iprp")
    if pitm is None or iprp is None:
        return None
    primary = _int(head, pitm[1] + 4, 2 if head[pitm[1]] == 0 else 4)
    properties = list(_boxes(head, iprp[1], iprp[2]))
    ipco, ipma = _child(properties, b"ipco"), _child(properties, b"ipma")
    if ipco is None or ipma is None:
        return None
    listed = list(_boxes(head, ipco[1], ipco[2]))
    owned = [listed[i - 1] for i in _associated(head, ipma, primary) if 0 < i <= len(listed)]
    extent = _child(owned, b"ispe")
    if extent is None:
        return None
    width, height = _int(head, extent[1] + 4, 4), _int(head, extent[1] + 8, 4)
    turn = _child(owned, b"irot")
    if turn is not None and head[turn[1]] & 1:
        width, height = height, width
    return width, height


def _associated(head: bytes, ipma: _Box, item: int) -> Iterator[int]:
    """The property indexes (from 1) that ``ipma`` gives to ``item``."""
    version, wide = head[ipma[1]], head[ipma[1] + 3] & 1
    at = ipma[1] + _FULL_BOX
    entries, at = _int(head, at, 4), at + 4
    id_size = 2 if version < 1 else 4
    for _ in range(entries):
        owner, count = _int(head, at, id_size), head[at + id_size]
        at += id_size + 1
        for _ in range(count):
            index = _int(head, at, 2) & 0x7FFF if wide else head[at] & 0x7F
            at += 2 if wide else 1
            if owner == item:
                yield index
        if at > ipma[2]:
            raise ValueError("ipma runs past its box")


def _boxes(head: bytes, start: int, end: int) -> Iterator[_Box]:
    at = start
    while at + 8 <= end:
        size, kind, content = _int(head, at, 4), head[at + 4 : at + 8], at + 8
        if size == 1:  # a 64-bit size follows the type
            size, content = _int(head, at + 8, 8), at + 16
        elif size == 0:  # to the end of the enclosing box
            size = end - at
        if size < content - at or at + size > end:
            return  # past what was read, or damaged: no further box is known
        yield kind, content, at + size
        at += size


def _child(boxes: Iterator[_Box] | list[_Box], kind: bytes) -> _Box | None:
    return next((box for box in boxes if box[0] == kind), None)


def _int(data: bytes, at: int, size: int) -> int:
    if at + size > len(data):
        raise IndexError("past the bytes read")
    return int.from_bytes(data[at : at + size], "big")
