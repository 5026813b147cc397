"""A TIFF with more bands than its colour and one alpha (extra samples: masks, spot
channels) is read as its colour and its first extra band: every task answers what it
answers for that picture. ``sepia`` was 422 on such a file while ``monochrome`` answered
colour and ``resize`` four bands (seeds 5250-5251)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
import pyvips

from tests.processing.test_sample_formats import pixels, render

#: (interpretation written, sample format, the bands that kind uses, how it reads trimmed)
KINDS = [
    ("srgb", "uchar", 4, "srgb"),
    ("multiband", "uchar", 4, "srgb"),
    ("rgb16", "ushort", 4, "rgb16"),
    ("multiband", "ushort", 4, "rgb16"),
    ("b-w", "uchar", 2, "b-w"),
    ("grey16", "ushort", 2, "grey16"),
    ("cmyk", "uchar", 5, "cmyk"),
]
CHAINS = [
    "sepia",
    "monochrome",
    "blackwhite",
    "negative",
    "resize=width:23",
    "blur=amount:2",
    "circle",
    "rounded_corners",
    "output=format:jpg",
    "output=format:webp,quality:100",
    "output=format:png",
    "modulate=brightness:120",
    "border=width:3,color:red",
]


def _picture(rng: random.Random, kind: tuple[str, str, int, str], bands: int) -> pyvips.Image:
    interpretation, fmt, _, _ = kind
    top = 255 if fmt == "uchar" else 65535
    width, height = rng.randint(8, 60), rng.randint(8, 60)
    numbers = np.random.default_rng(rng.randrange(1 << 30))
    data = numbers.integers(0, top + 1, (height, width, bands))
    image = pyvips.Image.new_from_array(data.astype(np.uint8 if fmt == "uchar" else np.uint16))
    return image.copy(interpretation=interpretation)


@pytest.mark.parametrize("seed", [5250, 5251])
def test_extra_bands_read_as_colour_and_alpha(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    for case in range(14):
        kind = rng.choice(KINDS)
        used, read_as = kind[2], kind[3]
        bands = used + rng.randint(1, 3)
        picture = _picture(rng, kind, bands)
        source, trimmed = tmp_path / f"{case}-all.tif", tmp_path / f"{case}-used.tif"
        picture.tiffsave(str(source))
        assert pyvips.Image.new_from_file(str(source)).bands == bands  # the premise
        picture.extract_band(0, n=used).copy(interpretation=read_as).tiffsave(str(trimmed))
        for tasks in rng.sample(CHAINS, 4):
            made = render(source, tasks, tmp_path, f"{case}-a")
            expected = render(trimmed, tasks, tmp_path, f"{case}-b")
            context = (case, kind, bands, tasks)
            assert (made.bands, made.width, made.height) == (
                expected.bands,
                expected.width,
                expected.height,
            ), context
            assert np.array_equal(pixels(made), pixels(expected)), context
