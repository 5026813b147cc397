"""HEIF files (HEIC, AVIF): their type from the ``ftyp`` brands, and the size their primary
image shows from its boxes, for generated files laid out every way the format allows."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stowage.core import filetypes, heifsize, imagesize


def box(kind: bytes, content: bytes, *, large: bool = False) -> bytes:
    if large:  # a 64-bit size after the type
        return struct.pack(">I4sQ", 1, kind, 16 + len(content)) + content
    return struct.pack(">I4s", 8 + len(content), kind) + content


def full_box(kind: bytes, version: int, flags: int, content: bytes) -> bytes:
    return box(kind, bytes([version]) + flags.to_bytes(3, "big") + content)


def ftyp(major: bytes, *compatible: bytes) -> bytes:
    return box(b"ftyp", major + b"\0\0\0\0" + b"".join(compatible))


@dataclass
class Layout:
    """A HEIF file's primary image among others, described by its boxes."""

    size: tuple[int, int]
    turn: int  # irot: quarter turns anticlockwise
    primary: int
    others: list[tuple[int, tuple[int, int]]]  # other items and their sizes
    pitm_version: int
    ipma_version: int
    wide_indexes: bool
    large_meta: bool

    def file(self, major: bytes = b"heic", *compatible: bytes) -> bytes:
        properties: list[bytes] = []
        owned: dict[int, list[int]] = {}
        for item, (width, height) in [*self.others, (self.primary, self.size)]:
            properties.append(full_box(b"ispe", 0, 0, struct.pack(">II", width, height)))
            owned.setdefault(item, []).append(len(properties))
        properties.append(box(b"irot", bytes([self.turn])))
        owned[self.primary].append(len(properties))
        id_format = ">H" if self.ipma_version < 1 else ">I"
        entries = b"".join(
            struct.pack(id_format, item)
            + bytes([len(indexes)])
            + b"".join(
                struct.pack(">H", 0x8000 | i) if self.wide_indexes else bytes([0x80 | i])
                for i in indexes
            )
            for item, indexes in owned.items()
        )
        ipma = full_box(
            b"ipma",
            self.ipma_version,
            int(self.wide_indexes),
            struct.pack(">I", len(owned)) + entries,
        )
        pitm_id = struct.pack(">H" if self.pitm_version == 0 else ">I", self.primary)
        meta_content = b"\0\0\0\0" + b"".join(
            [
                full_box(b"hdlr", 0, 0, b"\0" * 4 + b"pict" + b"\0" * 13),
                full_box(b"pitm", self.pitm_version, 0, pitm_id),
                box(b"iprp", box(b"ipco", b"".join(properties)) + ipma),
            ]
        )
        meta = box(b"meta", meta_content, large=self.large_meta)
        return ftyp(major, *compatible) + meta + box(b"mdat", b"\0" * 64)


SIDES = st.integers(1, 70000)
layouts = st.builds(
    Layout,
    size=st.tuples(SIDES, SIDES),
    turn=st.integers(0, 3),
    primary=st.integers(1, 65535),
    others=st.lists(st.tuples(st.integers(1, 65535), st.tuples(SIDES, SIDES)), max_size=4),
    pitm_version=st.integers(0, 1),
    ipma_version=st.integers(0, 1),
    wide_indexes=st.booleans(),
    large_meta=st.booleans(),
).filter(lambda layout: all(item != layout.primary for item, _ in layout.others))


@settings(max_examples=300, deadline=None)
@given(layouts)
def test_the_primary_images_size_is_read_and_turned(layout: Layout) -> None:
    width, height = layout.size
    shown = (height, width) if layout.turn % 2 else (width, height)
    made = layout.file()
    assert heifsize.shown_size(made) == shown
    assert imagesize.dimensions(made) == shown


@settings(max_examples=100, deadline=None)
@given(layouts, st.integers(0, 400))
def test_a_file_cut_short_has_no_size_or_its_whole_one(layout: Layout, cut: int) -> None:
    made = layout.file()
    head = made[: max(0, len(made) - 64 - cut)]  # the pixels, and then boxes, missing
    width, height = layout.size
    shown = (height, width) if layout.turn % 2 else (width, height)
    assert imagesize.dimensions(head) in (None, shown)


@pytest.mark.parametrize(
    ("brands", "kind"),
    [
        ((b"heic", b"mif1", b"heic"), "image/heic"),
        ((b"heix", b"mif1"), "image/heic"),
        ((b"hevc", b"msf1"), "image/heic"),
        ((b"mif1", b"heic"), "image/heic"),
        ((b"mif1", b"miaf", b"avif"), "image/avif"),
        ((b"avif", b"mif1", b"miaf"), "image/avif"),
        ((b"avis", b"msf1"), "image/avif"),
        ((b"mif1",), "image/heif"),
        ((b"isom", b"iso2", b"mp41"), "video/mp4"),
        ((b"qt  ",), "video/quicktime"),
    ],
)
def test_the_brands_say_which_image_or_video_it_is(brands: tuple[bytes, ...], kind: str) -> None:
    assert filetypes.sniff(ftyp(*brands) + b"\0" * 32) == kind


def test_a_compatible_brand_past_the_ftyp_box_is_not_read() -> None:
    head = ftyp(b"mif1") + box(b"free", b"avif")
    assert filetypes.sniff(head) == "image/heif"


def test_an_avif_made_by_libvips_is_read_as_libvips_reads_it(tmp_path: Path) -> None:
    import pyvips

    for width, height in ((64, 48), (301, 17)):
        made = tmp_path / f"{width}.avif"
        (pyvips.Image.black(width, height, bands=3) + 90).heifsave(str(made), compression="av1")
        head = made.read_bytes()
        assert filetypes.sniff(head) == "image/avif"
        loaded = pyvips.Image.new_from_file(str(made))
        assert heifsize.shown_size(head) == (loaded.width, loaded.height) == (width, height)
