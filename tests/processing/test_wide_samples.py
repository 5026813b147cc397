"""A TIFF of 64-bit samples (float, signed or unsigned integers, complex), which libvips'
TIFF loader does not read, is ``422 INVALID_IMAGE`` saying so, whatever the chain: the
message was "the image cannot be read: unable to call VipsForeignLoadTiffFile". Shapes,
values, layouts and chains from a seeded draw; a 32-bit float TIFF of the same picture is
read (docs/decisions.md, "64-bit float TIFF sources")."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
import pyvips
import tifffile

from stowage import errors
from tests.processing.test_engine import render

CHAINS = ["resize=width:10", "flip", "imagesize", "output=format:png", "metadata"]


def test_64_bit_samples_are_refused_by_name(tmp_path: Path) -> None:
    rng = random.Random(5282)
    draw = np.random.default_rng(5283)
    for dtype in ["float64", "float64", "int64", "uint64", "complex128"] * 2:
        shape = (rng.randrange(1, 80), rng.randrange(1, 80), rng.choice([1, 2, 3, 4]))
        pixels = draw.random(shape).astype(dtype)
        source = tmp_path / "wide.tif"
        options = {
            "compression": rng.choice([None, "zlib"]),
            "photometric": "rgb" if shape[2] >= 3 else "minisblack",
            "planarconfig": "contig",
            "tile": (16, 16) if rng.random() < 0.3 and min(shape[:2]) >= 16 else None,
        }
        tifffile.imwrite(source, _planes(pixels), **options)
        chain = rng.choice(CHAINS)
        with pytest.raises(errors.InvalidImage, match="samples are 64 bits wide"):
            render(tmp_path, source, chain)
        if dtype == "float64":  # the same picture in 32-bit floats is read
            options["compression"] = None
            tifffile.imwrite(source, _planes(pixels.astype("float32")), **options)
            made = render(tmp_path, source, "output=format:png")
            image = pyvips.Image.new_from_file(str(made))
            assert (image.width, image.height) == (shape[1], shape[0]), (shape, chain)


def _planes(pixels: np.ndarray) -> np.ndarray:
    return pixels.squeeze(axis=2) if pixels.shape[2] == 1 else pixels
