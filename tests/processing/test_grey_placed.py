"""``watermark``, ``collage`` and ``animate`` keep grey sources grey (processing/
composite_bands.py): when every image they place is grey (one band or grey and alpha, 8
or 16 bits) and every colour they add is a grey, the result is grey, its levels those of
the same task on the sources made sRGB (three equal bands), and an alpha where that
result has one. They made every result sRGB: a grey PNG came out as three equal bands.
A colour source or a colour that is not a grey makes the result sRGB.

Generated: seeded random tasks, sources of random kinds and colours, grey or not."""

from __future__ import annotations

import dataclasses
import random
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import pyvips

from stowage.processing import chain, composite, composite_bands
from stowage.processing.base import Limits
from stowage.processing.vips import VipsEngine

LIMITS = Limits(50_000_000, 10**9, 4000, 30, max_total_pixels=5_000_000)
SEEDS = range(5150, 5155)
CASES = 12  # a seed
GREY_KINDS = ("grey8", "greya8", "grey16", "greya16", "greyicc8", "greyicca16")
COLOUR_KINDS = ("rgb8", "rgba8")
GREYS = ("white", "black", "gray", "grey", "gray40", "silver", "808080", "333", "40404080")
GREYS_CLEAR = ("transparent", "00000000", "FFFFFF80")
D50 = (0.9642, 1.0, 0.8249)
COLOURS = ("red", "snow", "slategray", "00FF0080", "808081", "FEFFFF")


@dataclass
class Case:
    task: str
    kinds: list[str]
    segment: str
    colour: str | None  # the colour the task adds
    output: str  # png, jpg or gif

    @property
    def grey(self) -> bool:
        colour_grey = self.colour is None or self.colour in GREYS + GREYS_CLEAR
        return colour_grey and all(k in GREY_KINDS for k in self.placed)

    @property
    def placed(self) -> list[str]:
        """The files the result shows: a still animation holds the first one only."""
        still = self.task == "animate" and self.output != "gif"
        return self.kinds[:1] if still else self.kinds


def grey_profile(gamma: float) -> bytes:
    """An ICC v2 display profile of grey (GRAY to XYZ): a description, the D50 white
    and a gamma curve (``kTRC``)."""

    def fixed(*values: float) -> bytes:
        return b"".join(struct.pack(">i", round(v * 65536)) for v in values)

    text = b"grey test\0"
    tags = {
        b"desc": b"desc\0\0\0\0" + struct.pack(">I", len(text)) + text + bytes(78),
        b"wtpt": b"XYZ \0\0\0\0" + fixed(*D50),
        b"kTRC": b"curv\0\0\0\0" + struct.pack(">IH", 1, round(gamma * 256)) + bytes(2),
        b"cprt": b"text\0\0\0\0none\0",
    }
    offset, table, data = 128 + 4 + 12 * len(tags), b"", b""
    for name, body in tags.items():
        data += bytes(-(offset + len(data)) % 4)
        table += name + struct.pack(">II", offset + len(data), len(body))
        data += body
    head = b"lcms" + bytes([2, 0x10, 0, 0]) + b"mntrGRAYXYZ " + bytes(12) + b"acspAPPL"
    head += bytes(24) + fixed(*D50) + bytes(48)  # flags to intent; illuminant; the rest
    size = struct.pack(">I", offset + len(data))
    return size + head + struct.pack(">I", len(tags)) + table + data


def handle(index: int) -> str:
    return f"{index:020d}"


def case(rng: random.Random) -> Case:
    task = rng.choice(("watermark", "collage", "animate"))
    count = 2 if task == "watermark" else rng.randint(2, 4)
    grey_only = rng.random() < 0.6
    kinds = [rng.choice(GREY_KINDS) for _ in range(count)]
    if not grey_only:
        kinds[rng.randrange(count)] = rng.choice(COLOUR_KINDS)
    colour = rng.choice(GREYS + GREYS_CLEAR if rng.random() < 0.7 else COLOURS)
    if task == "watermark":
        size, place = rng.choice((30, 60, 100, 150)), rng.choice(("top,left", "bottom,right"))
        segment, colour = f"watermark=file:{handle(1)},size:{size},position:[{place}]", None
    elif task == "collage":
        files = ",".join(handle(i) for i in range(1, count))
        fit = rng.choice(("auto", "crop"))
        wide, tall, margin = rng.randint(60, 160), rng.randint(50, 140), rng.randint(1, 12)
        segment = f"collage=files:[{files}],width:{wide},height:{tall},margin:{margin},fit:{fit}"
        segment += f",color:{colour}"
    else:
        fit = rng.choice(("clip", "scale", "crop"))
        wide, tall = rng.randint(30, 90), rng.randint(30, 90)
        segment = f"animate=width:{wide},height:{tall},fit:{fit},background:{colour},delay:50"
    output = rng.choice(("png", "jpg", "gif") if task == "animate" else ("png", "jpg"))
    return Case(task, kinds, segment, colour, output)


def source(kind: str, rng: np.random.Generator) -> pyvips.Image:
    width, height = int(rng.integers(20, 90)), int(rng.integers(20, 90))
    deep = kind.endswith("16")
    top = 65535 if deep else 255
    colours = 3 if kind.startswith("rgb") else 1
    pixels = rng.integers(0, top + 1, (height, width, colours))
    if kind in ("greya8", "greya16", "greyicca16", "rgba8"):  # alpha: opaque, clear and partial
        alpha = rng.choice([0, top // 3, top], (height, width, 1))
        pixels = np.concatenate([pixels, alpha], axis=2)
    image = pyvips.Image.new_from_array(pixels.astype(np.uint16 if deep else np.uint8))
    space = "srgb" if colours == 3 else "grey16" if deep else "b-w"
    image = image.copy(interpretation=space)
    if "icc" in kind:  # a scanner's grey: levels in a gamma 1.8 grey's space
        image.set_type(pyvips.GValue.blob_type, "icc-profile-data", grey_profile(1.8))
    return image


def as_rgb(images: list[pyvips.Image], *colours: str) -> list[pyvips.Image]:
    """The placing before grey was kept: every file in sRGB, a grey one in three bands."""
    return [composite_bands.rgb(image, profiled=False) for image in images]


def render(folder: Path, images: list[pyvips.Image], item: Case, name: str) -> pyvips.Image:
    paths = []
    for index, image in enumerate(images):
        paths.append(folder / f"{name}{index}.png")
        image.pngsave(str(paths[-1]))
    parsed = chain.parse([item.segment, f"output=format:{item.output}"])
    output = chain.made_output(parsed, "image/png")
    dest = folder / f"{name}-out.{output.extension}"
    sources = tuple((handle(i), p) for i, p in enumerate(paths))
    listed = len(paths) if item.task == "animate" else 0
    with composite.using(sources if listed else sources[1:], LIMITS, listed, dest):
        VipsEngine().render(paths[0], parsed, output, dest, LIMITS)
    options = {"n": -1} if item.output == "gif" else {}
    return pyvips.Image.new_from_file(str(dest), **options)


def pixels(image: pyvips.Image) -> np.ndarray:
    return np.asarray(image.numpy(), dtype=np.int32).reshape(image.height, image.width, -1)


def cases() -> list[tuple[int, int, Case]]:
    found = []
    for seed in SEEDS:
        rng = random.Random(seed)
        found += [(seed, n, case(rng)) for n in range(CASES)]
    return found


@pytest.mark.parametrize(("seed", "n", "item"), cases(), ids=lambda v: str(v)[:12])
def test_grey_sources_placed_stay_grey(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, n: int, item: Case
) -> None:
    rng = np.random.default_rng(seed * 100 + n)
    images = [source(kind, rng) for kind in item.kinds]
    out = render(tmp_path, images, item, "placed")
    where = (seed, n, item)
    if not item.grey:
        assert out.interpretation == "srgb" and out.bands >= 3, where
        return
    if item.output != "gif":  # a GIF holds a palette of colours, whatever they are
        assert out.interpretation == "b-w", where
        assert out.bands in ((1, 2) if item.output == "png" else (1,)), where
    if item.output == "jpg":
        # The levels are compared losslessly: JPEG's encoder turns a level's difference
        # in noise into a dozen (the composite rounds grey and sRGB within a level).
        item = dataclasses.replace(item, output="png")
        out = render(tmp_path, images, item, "lossless")
    # the same files placed as sRGB, as they all were: the grey is its bands' level
    monkeypatch.setattr(composite, "together", as_rgb)
    coloured = pixels(render(tmp_path, images, item, "rgb"))
    grey = pixels(out)
    if item.output == "gif":  # read as sRGB either way: the frames are the same
        shown = grey[..., 3:] / 255 if grey.shape[2] == 4 else 1
        assert grey.shape == coloured.shape, where
        assert (np.abs(coloured - grey) * shown).max() <= 1, where
        return
    alpha = grey.shape[2] == 2  # where the sRGB result has one
    assert coloured.shape == (*grey.shape[:2], grey.shape[2] + 2), where
    # the levels, as shown: a colour under alpha a is within 255 / a levels
    shown = grey[..., 1] / 255 if alpha else 1
    for band in range(3):
        diff = (np.abs(coloured[..., band] - grey[..., 0]) * shown).max()
        assert diff <= 1, (*where, band, diff)
    if alpha:
        assert np.abs(coloured[..., 3] - grey[..., 1]).max() <= 1, where


def test_the_cases_cover_every_task_grey_and_not() -> None:
    seen = {(item.task, item.grey, item.output) for _, _, item in cases()}
    for task in ("watermark", "collage", "animate"):
        assert {(task, True, "png"), (task, True, "jpg"), (task, False, "png")} <= seen, task
    assert ("animate", True, "gif") in seen


@pytest.mark.parametrize("files", [2, 4, 9])
def test_a_partly_transparent_collage_background_keeps_its_level(
    tmp_path: Path, files: int
) -> None:
    """The background between the cells is the colour asked for, within a level:
    composited one file after another, each pass rounded again every pixel of the
    tiles it touched, and ``2D2D2DBF`` lost about a level a file (45 became 42)."""
    rng = np.random.default_rng(5155 + files)
    images = [source(rng.choice(COLOUR_KINDS), rng) for _ in range(files)]
    handles = ",".join(handle(i) for i in range(1, files))
    item = Case(
        "collage",
        [],
        f"collage=files:[{handles}],color:2D2D2DBF,margin:20,width:300,height:300",
        None,
        "png",
    )
    out = pixels(render(tmp_path, images, item, "drift"))
    edge = np.concatenate([out[:20].reshape(-1, 4), out[:, :20].reshape(-1, 4)])
    # one composite rounds it within a level
    assert (np.abs(edge - (45, 45, 45, 191)) <= 1).all(), np.unique(edge, axis=0)
