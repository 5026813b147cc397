"""JPEG 2000 sources held to their header: ``imagesize`` and ``metadata`` alone answered
from it, the limits and the cost estimate (the decode counted) checked on it before a
pixel is decoded (a 10000x10000 tiled JP2 of 221 KB was decoded whole, 21 s and
457 MB, for its size; a header of 1x100000000 was decoded, 1.3 GB, to be refused)."""

from __future__ import annotations

import io
import json
import random
import struct
import time
from pathlib import Path

import pytest
import pyvips
from PIL import Image, Jpeg2KImagePlugin

from stowage import errors
from stowage.processing import chain
from stowage.processing.base import BigJob, Limits
from stowage.processing.vips import VipsEngine

LIMITS = Limits(10**8, 10**9, 10_000, 60)


def _jp2(width: int, height: int, seed: int, claimed: tuple[int, int] | None = None) -> bytes:
    """A JP2 of ``width`` x ``height``, its header (``ihdr`` and the codestream's SIZ)
    made to say ``claimed`` when given."""
    out = io.BytesIO()
    Image.new("RGB", (width, height), (seed % 256, 80, 160)).save(out, "JPEG2000")
    data = bytearray(out.getvalue())
    if claimed is not None:
        ihdr = data.find(b"ihdr") + 4
        struct.pack_into(">II", data, ihdr, claimed[1], claimed[0])
        siz = data.find(b"\xff\x51") + 6  # marker, length, capabilities
        struct.pack_into(">II", data, siz, claimed[0], claimed[1])
    return bytes(data)


@pytest.fixture
def no_decode(monkeypatch: pytest.MonkeyPatch) -> None:
    def decoded(*_: object) -> None:
        raise AssertionError("the pixels were decoded")

    monkeypatch.setattr(Jpeg2KImagePlugin.Jpeg2KImageFile, "load", decoded)


def _render(source: Path, segments: list[str], limits: Limits = LIMITS) -> Path:
    parsed = chain.parse(segments)
    output = chain.output_for(parsed, "image/jp2")
    dest = source.with_name(f"out.{output.extension}")
    VipsEngine(threads_per_job=1).render(source, parsed, output, dest, limits)
    return dest


@pytest.mark.usefixtures("no_decode")
@pytest.mark.parametrize("seed", range(8))
def test_imagesize_and_metadata_alone_are_read_from_the_header(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    claimed = (rng.randrange(1, 10_001), rng.randrange(1, 10_001))  # up to 100 MP
    source = tmp_path / rng.choice(["a.jp2", "a.bin"])
    source.write_bytes(_jp2(rng.randrange(8, 40), rng.randrange(8, 40), seed, claimed))
    started = time.monotonic()
    size = json.loads(_render(source, ["imagesize"]).read_text())
    assert (size["width"], size["height"]) == claimed
    facts = json.loads(_render(source, ["metadata=params:[width,height]"]).read_text())
    assert (facts["width"], facts["height"]) == claimed
    assert time.monotonic() - started < 2


@pytest.mark.usefixtures("no_decode")
@pytest.mark.parametrize("seed", range(8))
def test_a_header_past_a_limit_is_refused_before_any_decode(tmp_path: Path, seed: int) -> None:
    """Past the pixel limit (also for ``imagesize``, as any source), or a result past the
    side limit (1xN, Nx1: few pixels, a result no side limit allows)."""
    rng = random.Random(seed)
    long_side = rng.randrange(LIMITS.max_output_dimension + 1, 10**8)
    extreme = [(1, long_side), (long_side, 1)][seed % 2]
    over = (rng.randrange(10_001, 20_000), rng.randrange(10_001, 20_000))
    source = tmp_path / "a.jp2"
    tasks = rng.choice([["flip"], ["output=format:png"], ["rotate=deg:90"], ["blur=amount:2"]])
    for claimed, segments in ((extreme, tasks), (over, tasks), (over, ["imagesize"])):
        source.write_bytes(_jp2(16, 16, seed, claimed))
        started = time.monotonic()
        with pytest.raises(errors.ImageTooLarge):
            _render(source, segments)
        assert time.monotonic() - started < 2, (claimed, segments)


def test_the_cost_estimate_counts_the_decode(tmp_path: Path) -> None:
    """The same chain on the same pixels costs more from a JPEG 2000 than from a PNG (its
    decode by OpenJPEG), more with more pixels, and is priced before any decode."""
    estimates: dict[tuple[str, int], float] = {}
    big = Limits(10**8, 10**9, 10_000, 60, big_cost=0)  # every estimate raised as BigJob
    for width in (300, 900):
        pixels = pyvips.Image.gaussnoise(width, 200, seed=width).cast("uchar")
        png = tmp_path / f"a{width}.png"
        pixels.pngsave(str(png))
        jp2 = tmp_path / f"a{width}.jp2"
        Image.open(png).save(jp2, "JPEG2000")
        for source, kind in ((png, "png"), (jp2, "jp2")):
            with pytest.raises(BigJob) as raised:
                _render(source, ["flip", "output=format:png"], big)
            estimates[kind, width] = float(raised.value.args[0])
    for width in (300, 900):
        assert estimates["jp2", width] > estimates["png", width]
    extra = [estimates["jp2", w] - estimates["png", w] for w in (300, 900)]
    assert extra[1] > 2 * extra[0]  # three times the pixels
