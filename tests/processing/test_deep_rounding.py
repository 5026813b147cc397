"""16-bit sources made 8-bit are rounded, ``round(v / 257)``, in every output format
(``ops.srgb``; docs/decisions.md, "Profiles and bit depths").

libvips' own 16 to 8-bit conversion shifts (``v >> 8``): a truncation, whose error grows
with the level, 0.36 of a level low on average in the darks and 0.37 high in the lights
of a colour picture (lossy outputs up to 0.6). Each case is a generated 16-bit picture
(grey, grey and alpha, RGB, RGBA; PNG or TIFF; with or without a Display P3 profile,
which these outputs keep) of one tone range, a gradient with noise; every 8-bit output
format is compared with ``round(v / 257)`` of its samples.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
import pyvips

from stowage.processing import chain
from stowage.processing.vips import VipsEngine
from tests.processing.test_engine import LIMITS

SEEDS = range(5285, 5289)
WIDTH, HEIGHT = 96, 64
TONES = ((0, 16384), (24576, 40960), (49152, 65535))
LOSSLESS = ("png", "tiff")
#: Lossy at their best quality: the encoder's own error is unbiased and under a level.
LOSSY = ("jpg", "webp", "avif")


def picture(rng: np.random.Generator, bands: int, tone: tuple[int, int]) -> np.ndarray:
    low, high = tone
    ramp = low + (high - low) * np.arange(WIDTH) / WIDTH
    noise = rng.integers(-400, 400, (HEIGHT, WIDTH, bands))
    levels = np.clip(ramp[None, :, None] + noise, 0, 65535).astype(np.uint16)
    if bands in (2, 4):
        levels[..., -1] = 65535  # opaque: a JPEG's flattening changes nothing
    return levels


def p3() -> bytes:
    black = pyvips.Image.black(1, 1, bands=3).copy(interpretation="srgb")
    return bytes(black.icc_export(output_profile="p3").get("icc-profile-data"))


def written(levels: np.ndarray, path: Path, profiled: bool) -> Path:
    bands = levels.shape[2]
    image = pyvips.Image.new_from_array(levels)
    image = image.copy(interpretation="grey16" if bands < 3 else "rgb16")
    if profiled and bands >= 3:
        image.set_type(pyvips.GValue.blob_type, "icc-profile-data", p3())
    image.write_to_file(str(path))
    return path


def made(source: Path, fmt: str, folder: Path) -> np.ndarray:
    segments = [f"output=format:{fmt}" + (",quality:100" if fmt in LOSSY else "")]
    parsed = chain.parse(segments)
    output = chain.output_for(parsed, "image/png")
    dest = folder / f"made.{output.extension}"
    VipsEngine(threads_per_job=1).render(source, parsed, output, dest, LIMITS)
    result = pyvips.Image.new_from_file(str(dest))
    assert result.format == "uchar"
    return np.asarray(result.numpy(), dtype=float).reshape(HEIGHT, WIDTH, -1)


def cases() -> list[tuple[int, str, int, bool]]:
    drawn = []
    for seed in SEEDS:
        rng = random.Random(seed)
        for _ in range(3):
            container = rng.choice(("png", "tif"))
            bands = rng.choice((1, 2, 3, 4))
            drawn.append((seed, container, bands, bands >= 3 and rng.random() < 0.5))
    return drawn


@pytest.mark.parametrize(("seed", "container", "bands", "profiled"), cases())
def test_16_bits_become_8_rounded_in_every_format(
    tmp_path: Path, seed: int, container: str, bands: int, profiled: bool
) -> None:
    rng = np.random.default_rng(seed)
    colours = 1 if bands < 3 else 3
    for tone in TONES:
        levels = picture(rng, bands, tone)
        source = written(levels, tmp_path / f"source.{container}", profiled)
        want = np.floor(levels[..., :colours] / 257 + 0.5)
        for fmt in (*LOSSLESS, *LOSSY, "gif"):
            got = made(source, fmt, tmp_path)
            error = got[..., : max(colours, 3 if got.shape[2] >= 3 else 1)] - want
            where = (fmt, tone)
            if fmt in LOSSLESS:
                assert np.abs(error).max() == 0, where
            else:  # a GIF's palette: exact for grey, within its quantising for colour
                assert abs(error.mean()) <= 0.3, (where, error.mean())
                assert np.abs(error).mean() <= 1.0, (where, np.abs(error).mean())


@pytest.mark.parametrize("seed", SEEDS)
def test_a_16_bit_source_scales_as_its_rounded_8_bit_version(tmp_path: Path, seed: int) -> None:
    """libvips' thumbnail made 16 bits 8 by its shift before shrinking: a resize (any
    scaling) was as biased as a save."""
    rng = np.random.default_rng(seed)
    bands = int(rng.integers(1, 5))
    levels = picture(rng, bands, TONES[int(rng.integers(0, 3))])
    deep = written(levels, tmp_path / "deep.png", False)
    rounded = np.floor(levels / 257 + 0.5).astype(np.uint8)
    eight = pyvips.Image.new_from_array(rounded).copy(interpretation="b-w" if bands < 3 else "srgb")
    eight.pngsave(str(tmp_path / "eight.png"))
    segment = f"resize=width:{int(rng.integers(20, 90))}"
    results = []
    for source in (deep, tmp_path / "eight.png"):
        parsed = chain.parse([segment])
        output = chain.output_for(parsed, "image/png")
        dest = tmp_path / f"{source.stem}-made.png"
        VipsEngine(threads_per_job=1).render(source, parsed, output, dest, LIMITS)
        results.append(pyvips.Image.new_from_file(str(dest)).numpy().astype(int))
    assert np.abs(results[0] - results[1]).max() == 0, segment
