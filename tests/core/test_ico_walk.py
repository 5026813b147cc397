"""An ICO's size is its shown entry's header wherever its directory puts it, followed up
to ``headwalk.ICO_WALK_BYTES`` into the file and no further (core/headwalk.py): read
from the head when it is there, else with one read for a directory longer than the head
and one for the entry. Layouts from seeded draws; offsets past the bound are claimed by
the directory, never read."""

from __future__ import annotations

import random
import struct
from pathlib import Path

from stowage.core import headwalk, imagesize
from tests.processing import bmpfiles


def walk_reads(data: bytes, head_bytes: int) -> tuple[tuple[int, int] | None, list[int]]:
    """What the walk finds from the first ``head_bytes``, and the offsets it reads."""
    reads: list[int] = []

    def read(at: int, least: int, _most: int) -> bytes:
        reads.append(at)
        return data[at : at + least]

    return headwalk.walked(headwalk.further(data[:head_bytes]), read), reads


def test_an_entry_is_read_where_it_lies(tmp_path: Path) -> None:
    rng = random.Random(5278)
    for _ in range(12):
        claimed = (rng.randrange(1, 70_000), rng.randrange(1, 70_000))
        entries = rng.choice([1, rng.randrange(2, 100), rng.randrange(256, 30_000)])
        pad = rng.choice([0, rng.randrange(1, 200_000), rng.randrange(1 << 20, 3 << 20)])
        data = bmpfiles.far_ico(rng, claimed, entries, pad, png=rng.random() < 0.5)
        head_bytes = rng.choice([4096, 128 * 1024, imagesize.HEADER_BYTES])
        found, reads = walk_reads(data, head_bytes)
        assert found == claimed, (entries, pad, head_bytes)
        assert len(reads) <= 2  # the directory when longer than the head, then the entry
        (tmp_path / "i.ico").write_bytes(data)
        assert imagesize.dimensions_in(tmp_path / "i.ico") == claimed


def test_an_entry_past_the_bound_is_not_followed() -> None:
    rng = random.Random(5279)
    for _ in range(12):
        data = bytearray(bmpfiles.far_ico(rng, (300, 200), rng.randrange(1, 50), 0, False))
        at = 6 + 16 * [e[0] for e in _directory(data)].index(0)  # the shown one: 0 is 256
        far = rng.randrange(headwalk.ICO_WALK_BYTES - 23, 1 << 32)
        struct.pack_into("<I", data, at + 12, far)
        found, reads = walk_reads(bytes(data), 4096)
        assert found is None and all(r < headwalk.ICO_WALK_BYTES for r in reads), far


def _directory(data: bytearray) -> list[tuple[int, ...]]:
    count = struct.unpack_from("<H", data, 4)[0]
    return [struct.unpack_from("<BBBBHHII", data, 6 + 16 * i) for i in range(count)]
