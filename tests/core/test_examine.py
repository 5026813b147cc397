"""Streaming hashes (checklist item 19: hashes of empty input) and EXIF value cleaning."""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stowage import errors
from stowage.core import examine

EMPTY = {
    "md5": "d41d8cd98f00b204e9800998ecf8427e",
    "sha1": "da39a3ee5e6b4b0d3255bfef95601890afd80709",
    "sha224": "d14a028c2a3a2bc9476102bb288234c415a2b01f828ea62ac5b3e42f",
    "sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "sha384": (
        "38b060a751ac96384cd9327eb1b1e36a21fdb71114be07434c0cc7bf63f6e1da"
        "274edebfe76f65fbd51ad2f14898b95b"
    ),
    "sha512": (
        "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce"
        "47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e"
    ),
}


async def chunks_of(parts: list[bytes]) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


def expected(data: bytes, names: list[str]) -> dict[str, str]:
    return {n: hashlib.new(n, data).hexdigest() for n in names}


async def test_hashes_of_empty_input_no_chunks() -> None:
    got = await examine.hash_stream(chunks_of([]), list(examine.HASHES))
    assert got == EMPTY


async def test_hashes_of_empty_input_empty_chunks() -> None:
    got = await examine.hash_stream(chunks_of([b"", b"", b""]), list(examine.HASHES))
    assert got == EMPTY


async def test_no_names_gives_no_hashes() -> None:
    assert await examine.hash_stream(chunks_of([b"abc"]), []) == {}


@pytest.mark.parametrize("name", examine.HASHES)
async def test_each_hash_alone(name: str) -> None:
    data = b"The quick brown fox jumps over the lazy dog"
    parts = [data[:5], data[5:6], b"", data[6:]]
    assert await examine.hash_stream(chunks_of(parts), [name]) == expected(data, [name])


@given(
    parts=st.lists(st.binary(max_size=300), max_size=12),
    names=st.lists(st.sampled_from(examine.HASHES), min_size=1, max_size=6, unique=True),
)
@settings(max_examples=60, deadline=None)
async def test_hash_stream_equals_hashlib_over_any_chunking(
    parts: list[bytes], names: list[str]
) -> None:
    got = await examine.hash_stream(chunks_of(parts), names)
    assert got == expected(b"".join(parts), names)
    assert list(got) == names


async def test_large_chunks_hash_correctly() -> None:
    parts = [bytes([i]) * (1 << 20) for i in range(4)]
    names = list(examine.HASHES)
    got = await examine.hash_stream(chunks_of(parts), names)
    assert got == expected(b"".join(parts), names)


async def test_a_source_error_propagates() -> None:
    async def broken() -> AsyncIterator[bytes]:
        yield b"abc"
        raise errors.UpstreamError("gone")

    with pytest.raises(errors.UpstreamError):
        await examine.hash_stream(broken(), ["sha256", "md5"])


def test_groups_cover_every_name_once() -> None:
    for n in range(1, len(examine.HASHES) + 1):
        names = list(examine.HASHES[:n])
        groups = examine._groups(names)
        assert 1 <= len(groups) <= 2
        assert sorted(x for g in groups for x in g) == sorted(names)


# --- EXIF ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (b"\x01\x02", "0102"),
        (b"x" * 1000, "78" * 256),
        ("text", "text"),
        (3, 3),
        (True, True),
        (None, None),
        (1.5, 1.5),
        (float("nan"), None),
        ((1, b"\x00", (2.0,)), [1, "00", [2.0]]),
        (list(range(100)), list(range(64))),
    ],
)
def test_json_value_is_json_safe(value: object, expected: object) -> None:
    got = examine._json_value(value)
    assert got == expected
    json.dumps(got, allow_nan=False)


def test_json_value_of_odd_objects() -> None:
    from fractions import Fraction

    assert examine._json_value(Fraction(1, 4)) == 0.25
    assert examine._json_value(object()).startswith("<object object")


def _jpeg_with_exif(tmp_path: Path, size: tuple[int, int] = (8, 8)) -> Path:
    from PIL import Image

    img = Image.new("RGB", size, "red")
    exif = Image.Exif()
    exif[0x010F] = "StowageCam"  # Make
    exif[0x0110] = "Model\x00X"  # Model
    path = tmp_path / "x.jpg"
    img.save(path, format="JPEG", exif=exif.tobytes())
    return path


async def test_read_exif_from_a_local_file(tmp_path: Path) -> None:
    path = _jpeg_with_exif(tmp_path)
    got = await examine.read_exif(
        chunks_of([]), path, max_bytes=10**6, max_pixels=10**6, timeout=5, spool_dir=tmp_path
    )
    assert got["Make"] == "StowageCam"
    json.dumps(got, allow_nan=False)


async def test_read_exif_from_a_stream(tmp_path: Path) -> None:
    data = _jpeg_with_exif(tmp_path).read_bytes()
    parts = [data[i : i + 100] for i in range(0, len(data), 100)]
    got = await examine.read_exif(
        chunks_of(parts),
        None,
        max_bytes=10**6,
        max_pixels=10**6,
        timeout=5,
        spool_dir=tmp_path / "spool",
    )
    assert got["Make"] == "StowageCam"
    assert list((tmp_path / "spool").iterdir()) == []  # the spool file is gone


async def test_read_exif_of_a_non_image_is_empty(tmp_path: Path) -> None:
    got = await examine.read_exif(
        chunks_of([b"not an image at all"]),
        None,
        max_bytes=10**6,
        max_pixels=10**6,
        timeout=5,
        spool_dir=tmp_path,
    )
    assert got == {}


async def test_read_exif_refuses_too_many_pixels(tmp_path: Path) -> None:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("L", (200, 200)).save(buf, format="PNG")
    with pytest.raises(errors.Unprocessable):
        await examine.read_exif(
            chunks_of([buf.getvalue()]),
            None,
            max_bytes=10**6,
            max_pixels=100 * 100,
            timeout=5,
            spool_dir=tmp_path,
        )
