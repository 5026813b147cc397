"""A grey source stays grey through every task that adds no colour: one band, or grey and
alpha where the result keeps an alpha (processing/effects.py ``ground``, colour.py
``modulate``). ``vignette``, ``torn_edges``, ``shadow`` and ``polaroid`` made every source
sRGB, and ``modulate`` turned grey's zero chroma into three equal bands. The grey
result is the colour result's band: the same chain on the source made sRGB (three equal
bands) gives the same levels. A colour that is not a grey (a red background, polaroid's
default snow frame) makes the result sRGB (docs/decisions.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import pyvips

from stowage.processing import catalogue, chain, ops
from stowage.processing.base import Limits
from stowage.processing.table import Kind
from stowage.processing.vips import VipsEngine

LIMITS = Limits(10**8, 10**9, 10_000, 60, max_cost=50.0)
SEEDS = range(5041, 5045)
KINDS = ("grey8", "greya8", "grey16", "greya16")

#: Chains that add no colour: the result is grey, with an alpha band where the same chain
#: on an sRGB source gives one. Every image task of the table that runs on one source
#: without a colour of its own is here (``test_every_colourless_task_is_covered``).
GREY = (
    "vignette=amount:100,blurmode:linear",
    "vignette=background:transparent",
    "torn_edges=spread:[3,9]",
    "torn_edges=background:transparent",
    "shadow",
    "shadow=color:gray40,background:transparent",
    "shadow=blur:2.5,opacity:100,vector:[-7,5],background:gray80",
    "polaroid=color:white",
    "polaroid=color:gray90,rotate:30,background:transparent",
    "modulate=brightness:130,saturation:300,hue:90",
    "modulate=brightness:40",
    "flip",
    "flop",
    "rotate=deg:30",
    "resize=width:60",
    "crop=dim:[3,4,50,40]",
    "blur=amount:3",
    "sharpen=amount:3",
    "pixelate=amount:5",
    "partial_blur=objects:[[5,5,40,30]]",
    "partial_pixelate=objects:[[5,5,40,30]],type:oval",
    "monochrome",
    "blackwhite",
    "negative",
    "enhance",
    "upscale",
    "oil_paint",
    "redeye",
    "circle",
    "rounded_corners",
    "border=color:gray30",
    "smart_crop=width:50,height:40",
    "blur_faces",
    "pixelate_faces",
    "crop_faces",
    "detect_faces",
)
#: Chains that draw a colour that is not grey, or tone the picture: sRGB is right.
COLOURED = (
    "vignette=background:red",
    "torn_edges=background:00FF0080",
    "shadow=color:blue",
    "polaroid",
    "sepia",
)
#: Tasks that take other files (``test_grey_placed``) or no raster source.
OTHERS = {"watermark", "collage", "animate", "urlscreenshot", "ascii"}


def source(folder: Path, kind: str, seed: int) -> pyvips.Image:
    rng = np.random.default_rng(seed)
    width, height = int(rng.integers(60, 140)), int(rng.integers(50, 120))
    deep = kind.endswith("16")
    top = 65535 if deep else 255
    grey = rng.integers(0, top + 1, (height, width, 1))
    if kind.startswith("greya"):  # alpha: opaque, clear and partial
        grey = np.concatenate([grey, rng.choice([0, top // 3, top], (height, width, 1))], axis=2)
    pixels = grey.astype(np.uint16 if deep else np.uint8)
    image = pyvips.Image.new_from_array(pixels)
    return image.copy(interpretation="grey16" if deep else "b-w")


def render(folder: Path, image: pyvips.Image, segment: str, name: str) -> pyvips.Image:
    path = folder / f"{name}.png"
    image.pngsave(str(path))
    parsed = chain.parse([segment])
    output = chain.output_for(parsed, "image/png")
    dest = folder / f"{name}-out.{output.extension}"
    VipsEngine().render(path, parsed, output, dest, LIMITS)
    return pyvips.Image.new_from_file(str(dest))


def as_rgb(image: pyvips.Image) -> pyvips.Image:
    """The grey source as sRGB: its grey in three bands (alpha kept), in 8 bits as every
    task makes a 16-bit grey (``ops.srgb``)."""
    image = ops.srgb(image)
    grey = image[0]
    rgb = grey.bandjoin([grey, grey])
    if image.bands == 2:
        rgb = rgb.bandjoin(image[1])
    return rgb.copy(interpretation="srgb")


def pixels(image: pyvips.Image) -> np.ndarray:
    return np.asarray(image.numpy(), dtype=np.int32).reshape(image.height, image.width, -1)


@pytest.mark.parametrize("segment", GREY)
@pytest.mark.parametrize("kind", KINDS)
def test_a_grey_source_stays_grey(tmp_path: Path, segment: str, kind: str) -> None:
    for seed in SEEDS:
        image = source(tmp_path, kind, seed)
        out = render(tmp_path, image, segment, f"grey{seed}")
        assert out.interpretation == "b-w", (segment, kind, seed)
        coloured = pixels(render(tmp_path, as_rgb(image), segment, f"rgb{seed}"))
        grey = pixels(out)
        colours = 3 if coloured.shape[2] >= 3 else 1  # monochrome makes any source grey
        assert grey.shape == (*coloured.shape[:2], coloured.shape[2] - colours + 1), segment
        # the levels of the chain on the source made sRGB, as shown: weighted by alpha
        # (a colour under alpha a is unpremultiplied within 255 / a levels)
        shown = grey[..., 1] / 255 if grey.shape[2] == 2 else 1
        for band in range(colours):
            diff = (np.abs(coloured[..., band] - grey[..., 0]) * shown).max()
            assert diff <= 1, (segment, kind, seed, band, diff)
        if grey.shape[2] == 2:
            assert np.abs(coloured[..., colours] - grey[..., 1]).max() <= 1, (segment, kind)


@pytest.mark.parametrize("segment", COLOURED)
def test_a_colour_makes_a_grey_source_srgb(tmp_path: Path, segment: str) -> None:
    out = render(tmp_path, source(tmp_path, "greya8", 5045), segment, "grey")
    assert out.interpretation == "srgb" and out.bands >= 3


def test_every_colourless_task_is_covered() -> None:
    named = {s.split("=")[0] for s in GREY} | {s.split("=")[0] for s in COLOURED}
    tasks = {s.name for s in catalogue.TABLE.values() if s.kind is Kind.IMAGE}
    assert tasks - named - OTHERS == set()
