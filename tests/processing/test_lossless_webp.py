"""A lossless WebP source whose result is WebP by default (no format, no quality asked)
is saved lossless (``webpheader.kept_lossless``): a flip or a crop gives its exact
pixels, still or animated, and every frame is ``VP8L``. libvips' defaults saved it lossy
(quality 75): a flipped lossless screenshot came back with its pixels changed. A format
or a quality asked, or a lossy source, gives lossy WebP as before; the estimate prices
the lossless save's higher rate."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import pyvips

from stowage import errors
from stowage.processing import chain, cost, frames, saverates, webpheader
from stowage.processing.base import Limits
from stowage.processing.vips import VipsEngine

LIMITS = Limits(10**8, 10**9, 10_000, 60, max_cost=50.0)
SEEDS = range(5046, 5050)


def made(
    folder: Path, seed: int, *, pages: int, lossless: bool = True, alpha: bool = False
) -> Path:
    """A WebP of ``pages`` frames of blocky random colours (what lossless holds well)."""
    rng = np.random.default_rng(seed)
    width, height = int(rng.integers(20, 90)), int(rng.integers(20, 70))
    bands = 4 if alpha else 3
    pixels = rng.integers(0, 256, (height * pages, width, bands), dtype=np.uint8)
    if alpha:
        pixels[..., 3] = rng.choice([0, 90, 255], (height * pages, width))
        pixels[pixels[..., 3] == 0] = 0  # transparent pixels are transparent black
    image = pyvips.Image.new_from_array(pixels).copy(interpretation="srgb")
    if pages > 1:
        image.set_type(pyvips.GValue.gint_type, "page-height", height)
        image.set_type(pyvips.GValue.array_int_type, "delay", [40 + 10 * i for i in range(pages)])
    path = folder / f"src{seed}-{pages}-{lossless}.webp"
    image.webpsave(str(path), lossless=lossless, Q=80)
    return path


def render(folder: Path, source: Path, *segments: str) -> tuple[Path, np.ndarray]:
    parsed = chain.parse(list(segments))
    output = chain.output_for(parsed, "image/webp")
    dest = folder / f"out.{output.extension}"
    VipsEngine().render(source, parsed, output, dest, LIMITS)
    return dest, decoded(dest)


def decoded(path: Path) -> np.ndarray:
    image = pyvips.Image.new_from_file(str(path), n=-1)
    return np.asarray(image.numpy(), dtype=np.int32).reshape(image.height, image.width, -1)


def chunks(path: Path) -> set[bytes]:
    """The image chunks' kinds, found in the bytes (independently of ``webpheader``)."""
    data = path.read_bytes()
    return {kind for kind in (b"VP8 ", b"VP8L") if kind in data}


def shown(pixels: np.ndarray) -> np.ndarray:
    """Colours under alpha 0 are no one's: libwebp may change them."""
    if pixels.shape[2] == 4:
        pixels = pixels.copy()
        pixels[pixels[..., 3] == 0] = 0
    return pixels


@pytest.mark.parametrize("pages", [1, 4])
@pytest.mark.parametrize("alpha", [False, True])
def test_a_lossless_webp_stays_lossless_and_exact(tmp_path: Path, pages: int, alpha: bool) -> None:
    for seed in SEEDS:
        source = made(tmp_path, seed, pages=pages, alpha=alpha)
        assert webpheader.lossless(source) and chunks(source) == {b"VP8L"}
        pixels = shown(decoded(source))
        height = pixels.shape[0] // pages
        strip = [pixels[i * height : (i + 1) * height] for i in range(pages)]
        dest, flipped = render(tmp_path, source, "flip")
        assert chunks(dest) == {b"VP8L"}, seed
        assert (shown(flipped) == np.concatenate([f[::-1] for f in strip])).all(), seed
        dest, cropped = render(tmp_path, source, "crop=dim:[3,2,15,12]")
        assert chunks(dest) == {b"VP8L"}, seed
        assert (shown(cropped) == np.concatenate([f[2:14, 3:18] for f in strip])).all(), seed
        dest, resized = render(tmp_path, source, "resize=width:30")
        assert chunks(dest) == {b"VP8L"} and resized.shape[1] == 30, seed
        if pages > 1:
            header = pyvips.Image.new_from_file(str(dest), n=-1)
            assert header.get("n-pages") == pages
            assert list(header.get("delay")) == [40 + 10 * i for i in range(pages)]


@pytest.mark.parametrize("asked", ["output=format:webp", "quality=value:80", "output=quality:90"])
def test_a_format_or_quality_asked_is_lossy(tmp_path: Path, asked: str) -> None:
    for seed in SEEDS:
        dest, _ = render(tmp_path, made(tmp_path, seed, pages=2), "flip", asked)
        assert chunks(dest) == {b"VP8 "}, (asked, seed)


def test_a_lossy_source_stays_lossy(tmp_path: Path) -> None:
    for seed in SEEDS:
        for pages in (1, 3):
            source = made(tmp_path, seed, pages=pages, lossless=False)
            assert not webpheader.lossless(source)
            dest, _ = render(tmp_path, source, "flip")
            assert chunks(dest) == {b"VP8 "}, (seed, pages)


def test_the_header_reads_mixed_and_damaged_files(tmp_path: Path) -> None:
    lossy, lossless = made(tmp_path, 5046, pages=1, lossless=False), made(tmp_path, 5047, pages=1)
    mixed = tmp_path / "mixed.webp"  # a lossless file with a lossy chunk appended
    data = lossless.read_bytes() + lossy.read_bytes()[12:]
    mixed.write_bytes(data[:4] + (len(data) - 8).to_bytes(4, "little") + data[8:])
    assert not webpheader.lossless(mixed)
    for cut in (5, 13, 20, 30):
        damaged = tmp_path / f"cut{cut}.webp"
        damaged.write_bytes(lossless.read_bytes()[:cut])
        assert not webpheader.lossless(damaged)


def test_the_estimate_prices_the_lossless_save(tmp_path: Path) -> None:
    source = made(tmp_path, 5048, pages=3)
    parsed = chain.parse(["flip"])
    output = chain.output_for(parsed, "image/webp")
    opened = frames.open_source(str(source), parsed, output, LIMITS, "sequential")
    lossy = cost.estimate(opened, parsed, opened.image.width, "webp")
    kept = cost.estimate(opened, parsed, opened.image.width, saverates.LOSSLESS_WEBP)
    pixels = opened.image.width * opened.image.height / 1e6
    more = saverates.SAVE[saverates.LOSSLESS_WEBP] - saverates.SAVE["webp"]
    assert kept - lossy == pytest.approx(more * pixels)


def test_the_engine_prices_the_save_it_makes(tmp_path: Path) -> None:
    """With the cost limit between the lossy and the lossless estimate, the lossless
    result is refused as too costly and the lossy one (a format asked) is made."""
    rng = np.random.default_rng(5049)
    pixels = rng.integers(0, 256, (1000, 1000, 3), dtype=np.uint8)
    source = tmp_path / "big.webp"
    pyvips.Image.new_from_array(pixels).copy(interpretation="srgb").webpsave(
        str(source), lossless=True
    )
    parsed = chain.parse(["flip"])
    output = chain.output_for(parsed, "image/webp")
    opened = frames.open_source(str(source), parsed, output, LIMITS, "sequential")
    lossy = cost.estimate(opened, parsed, 1000, "webp")
    kept = cost.estimate(opened, parsed, 1000, saverates.LOSSLESS_WEBP)
    between = dataclasses.replace(LIMITS, max_cost=(lossy + kept) / 2)
    with pytest.raises(errors.ProcessingTooCostly):
        VipsEngine().render(source, parsed, output, tmp_path / "out.webp", between)
    asked = chain.parse(["flip", "output=format:webp"])
    VipsEngine().render(source, asked, output, tmp_path / "out.webp", between)
    assert chunks(tmp_path / "out.webp") == {b"VP8 "}
