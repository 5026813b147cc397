"""BMP and ICO sources (``pillowformats``): every task on them answered 415 NOT_AN_IMAGE
(the bundled libvips has no loader for either). Each variant is decoded by Pillow in the
job process, held to the limits from its header first, and its pixels are Pillow's."""

from __future__ import annotations

import random
import struct
import time
from pathlib import Path

import numpy as np
import pytest
import pyvips
from PIL import BmpImagePlugin, IcoImagePlugin, Image

from stowage import errors
from stowage.processing import chain, composite
from stowage.processing.base import BigJob, Limits
from stowage.processing.vips import VipsEngine
from tests.processing import bmpfiles

LIMITS = Limits(10**8, 10**9, 10_000, 60)
#: Chains each variant goes through (the crop's box drawn per file).
CHAINS = [
    ["output=format:png"],
    ["output=format:tiff"],
    ["output=format:webp"],
    ["output=format:jpg"],
    ["rotate=deg:90", "output=format:png"],
    ["resize=width:{wider}", "output=format:png"],
    ["resize=width:{narrower}", "output=format:webp"],
    ["crop=dim:{box}", "output=format:png"],
]


def _render(source: Path, segments: list[str], limits: Limits = LIMITS) -> pyvips.Image:
    parsed = chain.parse(segments)
    output = chain.output_for(parsed, "image/bmp")
    dest = source.with_name(f"out.{output.extension}")
    VipsEngine(threads_per_job=1).render(source, parsed, output, dest, limits)
    return dest


def _pixels(path: Path) -> np.ndarray:
    image = pyvips.Image.new_from_file(str(path))
    if image.bands == 3:
        image = image.bandjoin(255)
    return np.ndarray(
        buffer=image.write_to_memory(), dtype=np.uint8, shape=[image.height, image.width, 4]
    )


def _source(tmp_path: Path, rng: random.Random, variant: str) -> tuple[Path, np.ndarray]:
    width, height = rng.randrange(3, 70), rng.randrange(3, 70)
    if variant == "ico":
        sides = sorted(rng.sample([16, 24, 32, 48, 64], rng.randrange(1, 4)))
        data = bmpfiles.ico(rng, sides, png_entry=rng.random() < 0.5)
    else:
        top_down = not variant.startswith("rle") and rng.random() < 0.5
        data = bmpfiles.bmp(variant, width, height, rng, top_down)
    source = tmp_path / rng.choice(["a.bmp", "a.ico", "photo", "a.png"])  # not by name
    source.write_bytes(data)
    return source, np.asarray(bmpfiles.expected(data))


VARIANTS = [v[0] for v in bmpfiles.BMP_VARIANTS] + ["ico"]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("seed", [5240, 5241])
def test_every_variant_is_pillows_pixels_through_the_tasks(
    tmp_path: Path, variant: str, seed: int
) -> None:
    """Each chain on the file gives what it gives on a PNG of Pillow's own decode (within
    a level: the same encoders), and a lossless result is Pillow's pixels exactly."""
    rng = random.Random(f"{seed}-{variant}")
    source, want = _source(tmp_path, rng, variant)
    height, width = want.shape[:2]
    reference = tmp_path / "reference.png"
    opaque = bool((want[..., 3] == 255).all())
    Image.fromarray(want[..., :3] if opaque else want).save(reference)
    left, top = rng.randrange(width), rng.randrange(height)
    box = [left, top, rng.randrange(1, width - left + 1), rng.randrange(1, height - top + 1)]
    sizes = {"wider": width * 2, "narrower": max(1, width // 2)}
    shown = want[..., 3] > 0  # a transparent pixel's colour is nobody's
    for chained in CHAINS:
        segments = [s.format(box=str(box).replace(" ", ""), **sizes) for s in chained]
        got = _pixels(_render(source, segments))
        same = _pixels(_render(reference, segments))
        assert got.shape == same.shape, (variant, segments)
        assert abs(got.astype(int) - same).max() <= 1, (variant, segments)
        if segments[0].endswith(("png", "tiff")):
            assert (got[shown] == want[shown]).all(), (variant, segments)
    sized = _render(source, ["imagesize"]).read_text()
    assert sized == f'{{"width": {width}, "height": {height}}}'


@pytest.mark.parametrize("seed", [5242, 5243])
def test_a_bmp_or_ico_is_a_watermark(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    base = tmp_path / "base.png"
    pyvips.Image.black(80, 60).new_from_image([255, 0, 0]).cast("uchar").write_to_file(str(base))
    data = bmpfiles.bmp("rgb24", 20, 20, rng) if seed % 2 else bmpfiles.ico(rng, [16, 32], True)
    mark = tmp_path / "mark"
    mark.write_bytes(data)
    want = np.asarray(bmpfiles.expected(data))
    named = "M" * 20
    parsed = chain.parse([f"watermark=file:{named},position:[top,left]", "output=format:png"])
    output = chain.output_for(parsed, "image/png")
    dest = tmp_path / "out.png"
    with composite.using(((named, mark),), LIMITS, 0, dest):
        VipsEngine().render(base, parsed, output, dest, LIMITS)
    got = _pixels(dest)
    side = want.shape[0]
    opaque = want[..., 3] == 255
    assert (got[:side, :side][opaque][:, :3] == want[opaque][:, :3]).all()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tif")]  # removed


@pytest.fixture
def no_decode(monkeypatch: pytest.MonkeyPatch) -> None:
    def decoded(*_: object) -> None:
        raise AssertionError("the pixels were decoded")

    monkeypatch.setattr(BmpImagePlugin.BmpImageFile, "load", decoded)
    monkeypatch.setattr(IcoImagePlugin.IcoFile, "frame", decoded)


@pytest.mark.usefixtures("no_decode")
@pytest.mark.parametrize("seed", [5244, 5245, 5246])
def test_a_header_past_the_limit_is_refused_before_any_decode(tmp_path: Path, seed: int) -> None:
    """A BMP header claiming 100000x100000 (or an ICO entry's DIB or PNG claiming a size
    its directory does not) is 422 at once, for ``imagesize`` too; within the limit,
    ``imagesize`` is the header's, nothing decoded."""
    rng = random.Random(seed)
    claimed = (rng.randrange(10_001, 100_001), rng.randrange(10_001, 100_001))
    data = bytearray(bmpfiles.bmp(rng.choice(["rgb24", "rle8", "pal4"]), 8, 8, rng))
    struct.pack_into("<ii", data, 18, *claimed)
    icon = bytearray(bmpfiles.ico(rng, [16, 32], png_entry=seed % 2 == 0))
    entry = struct.unpack_from("<I", icon, 6 + 16 + 12)[0]  # the 32 px entry's offset
    if seed % 2 == 0:
        struct.pack_into(">II", icon, entry + 16, *claimed)
    else:
        struct.pack_into("<ii", icon, entry + 4, claimed[0], claimed[1] * 2)
    for made in (bytes(data), bytes(icon)):
        source = tmp_path / "a.bmp"
        source.write_bytes(made)
        for segments in (["imagesize"], ["resize=width:10"], ["output=format:png"]):
            started = time.monotonic()
            with pytest.raises(errors.ImageTooLarge):
                _render(source, segments)
            assert time.monotonic() - started < 2
    small = bytearray(data)
    struct.pack_into("<ii", small, 18, 4000, -3000)  # top-down: its height is 3000
    source.write_bytes(bytes(small))
    assert _render(source, ["imagesize"]).read_text() == '{"width": 4000, "height": 3000}'


@pytest.mark.parametrize("seed", [5247, 5248])
def test_a_damaged_file_is_invalid_image(tmp_path: Path, seed: int) -> None:
    """Cut short, or its bytes overwritten at random: 422 INVALID_IMAGE (or a picture; a
    size past the limit; a signature gone, 415), never another error."""
    rng = random.Random(seed)
    answered = {"invalid": 0, "drawn": 0}
    for _ in range(40):
        variant = rng.choice(VARIANTS)
        if variant == "ico":
            data = bytearray(bmpfiles.ico(rng, [16, 32], rng.random() < 0.5))
        else:
            data = bytearray(bmpfiles.bmp(variant, 20, 20, rng))
        if rng.random() < 0.5:
            data = data[: rng.randrange(30, len(data))]
        else:
            for _ in range(rng.randrange(1, 6)):
                data[rng.randrange(10, len(data))] = rng.randrange(256)
        source = tmp_path / "a.bmp"
        source.write_bytes(bytes(data))
        try:
            _render(source, ["resize=width:10", "output=format:png"])
            answered["drawn"] += 1
        except (errors.InvalidImage, errors.ImageTooLarge, errors.NotAnImage):
            answered["invalid"] += 1
    assert answered["invalid"] > 5, answered


@pytest.mark.parametrize("seed", [5249])
def test_the_cost_estimate_counts_the_decode(tmp_path: Path, seed: int) -> None:
    """The same chain on the same size costs more from a BMP than from a PNG (Pillow's
    decode and the TIFF it writes), more from an RLE one (Pillow's RLE decoder is
    Python), more with more pixels; priced before any decode."""
    rng = random.Random(seed)
    big = Limits(10**8, 10**9, 10_000, 60, big_cost=0)  # every estimate raised as BigJob
    estimates: dict[tuple[str, int], float] = {}
    for width in (300, 900):
        for kind in ("png", "rgb24", "rle8"):
            source = tmp_path / f"{kind}{width}"
            if kind == "png":
                pyvips.Image.black(width, 200).write_to_file(str(source) + ".png")
                source = source.with_name(source.name + ".png")
            else:
                source.write_bytes(bmpfiles.bmp(kind, width, 200, rng))
            with pytest.raises(BigJob) as raised:
                _render(source, ["flip", "output=format:png"], big)
            estimates[kind, width] = float(raised.value.args[0])
    for width in (300, 900):
        assert estimates["png", width] < estimates["rgb24", width] < estimates["rle8", width]
    extra = [estimates["rle8", w] - estimates["png", w] for w in (300, 900)]
    assert extra[1] > 2 * extra[0]  # three times the pixels


def test_a_flat_rle_file_is_priced_by_its_runs(tmp_path: Path) -> None:
    """An RLE BMP's decode is a step a run: 36 MP in runs of 250 pixels (301 KB) decoded
    in 0.49 s, 1 MP in runs of 3 (668 KB) in 0.30 s; priced by its pixels alone at the
    second's rate, the first was estimated at 16 s (over the default cost limit)."""
    width, height = 6000, 6000
    row = b"".join(bytes((250, i % 7)) for i in range(width // 250)) + b"\x00\x00"
    runs = row * height + b"\x00\x01"
    info = struct.pack("<IiiHHIIiiII", 40, width, height, 1, 8, 1, len(runs), 0, 0, 256, 0)
    offset = 14 + 40 + 1024
    source = tmp_path / "flat.bmp"
    head = b"BM" + struct.pack("<IHHI", offset + len(runs), 0, 0, offset)
    source.write_bytes(head + info + bytes(1024) + runs)
    # The same picture as an uncompressed 8-bit BMP (a flat PNG is priced at the flat
    # rate, which a BMP's decode through Pillow is not given).
    plain = tmp_path / "plain.bmp"
    pixels = bytes(width * height)  # 6000 is a multiple of 4: no row padding
    plain_info = struct.pack("<IiiHHIIiiII", 40, width, height, 1, 8, 0, len(pixels), 0, 0, 256, 0)
    plain_head = b"BM" + struct.pack("<IHHI", offset + len(pixels), 0, 0, offset)
    plain.write_bytes(plain_head + plain_info + bytes(1024) + pixels)
    big = Limits(10**8, 10**9, 10_000, 60, big_cost=0)
    estimates = []
    for path in (source, plain):
        with pytest.raises(BigJob) as raised:
            _render(path, ["flip", "output=format:png"], big)
        estimates.append(float(raised.value.args[0]))
    assert 0 < estimates[0] - estimates[1] < 0.05 * 36  # at most 0.05 s a megapixel more


@pytest.mark.parametrize("kind", ["1-bit", "16 greys", "ico 1-bit", "ico 16 greys"])
def test_a_grey_bmp_or_ico_gives_grey_results(tmp_path: Path, kind: str) -> None:
    """A BMP or ICO whose colours are all greys is a grey source, as a palette PNG or GIF
    of greys is: one band through the chains (a 1-bit or 16-grey BMP came out RGB, the
    same picture as a PNG grey; seed 9515 of the source probes)."""
    rng = np.random.default_rng(9515)
    levels = rng.integers(0, 256, (23, 37)).astype(np.uint8)
    picture = Image.fromarray(levels, "L")
    picture = picture.convert("1") if "1-bit" in kind else picture.quantize(16)
    source = tmp_path / "grey"
    if kind.startswith("ico"):
        picture.resize((32, 32)).save(source, "ICO", sizes=[(32, 32)])
    else:
        picture.save(source, "BMP")
    with Image.open(source) as opened:
        want = np.asarray(opened.convert("RGBA").convert("L"))
        shown = np.asarray(opened.convert("RGBA"))[..., 3] > 0
    for segments in (["output=format:png"], ["flip", "output=format:tiff"], ["output=format:jpg"]):
        made = pyvips.Image.new_from_file(str(_render(source, segments)))
        assert made.interpretation == "b-w" and made.bands in (1, 2), (kind, segments)
        if segments == ["output=format:png"]:
            got = np.ndarray(
                buffer=made[0].write_to_memory(), dtype=np.uint8, shape=[made.height, made.width]
            )
            assert (got[shown] == want[shown]).all(), kind
