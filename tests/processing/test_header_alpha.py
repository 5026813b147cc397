"""A source's alpha, as the estimate reads it (``cost.Header.alpha``), is the alpha of the
picture the engine decodes, for the sources priced from their header (JPEG 2000, BMP,
ICO: ``jp2header``).

Before: the estimate read it with ``getattr(opened, "image")``, so a header without a
libvips image (``cost.Still``) had none: an RGBA JPEG 2000 through
``sharpen=amount:20/resize`` (a sharpen with alpha is computed again for each strip of
a shrinking resize, ``costholds.STRIPS_MARGIN``) was priced as an RGB one, below the
engine's own estimate of the decoded picture."""

from __future__ import annotations

import io
import random
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from stowage.processing import chain, cost, frames, jp2header, pillowformats
from tests.processing import bmpfiles
from tests.processing.test_cost import LIMITS

SEEDS = [5254, 5255]
MODES = ["RGB", "RGBA", "L", "LA"]


def _jp2(rng: random.Random, width: int, height: int) -> bytes:
    mode = rng.choice(MODES)
    bands = len(mode)
    pixels = np.random.default_rng(rng.randrange(1 << 30)).integers(
        0, 256, (height, width, bands), np.uint8
    )
    picture = Image.fromarray(pixels[:, :, 0] if bands == 1 else pixels, mode)
    made = io.BytesIO()
    picture.save(made, "JPEG2000", irreversible=rng.random() < 0.5)
    return made.getvalue()


def _sources(tmp_path: Path, seed: int) -> list[tuple[Path, str]]:
    rng = random.Random(seed)
    made = []
    for case in range(10):
        width, height = rng.randrange(8, 90), rng.randrange(8, 90)
        kind = rng.choice(["image/jp2", "image/bmp", "image/x-icon"])
        if kind == "image/jp2":
            data = _jp2(rng, width, height)
        elif kind == "image/bmp":
            data = bmpfiles.bmp(rng.choice(bmpfiles.BMP_VARIANTS)[0], width, height, rng)
        else:
            sides = sorted(rng.sample([16, 24, 32, 48], rng.randrange(1, 3)))
            data = bmpfiles.ico(rng, sides, png_entry=rng.random() < 0.5)
        source = tmp_path / f"s{case}"
        source.write_bytes(data)
        made.append((source, kind))
    return made


@pytest.mark.parametrize("seed", SEEDS)
def test_the_header_alpha_is_the_decoded_pictures(tmp_path: Path, seed: int) -> None:
    for source, kind in _sources(tmp_path, seed):
        with pillowformats.decoded(source, tmp_path / "o.png", LIMITS) as decoded:
            engine = frames.load(str(decoded), {}).hasalpha()
        assert pillowformats.has_alpha(source, kind) == engine, (source.name, kind)


def _priced(source: Path, segments: list[str], monkeypatch: pytest.MonkeyPatch) -> float:
    """The estimate ``jp2header`` holds a chain on ``source`` to, less the decode."""
    found: list[float] = []
    monkeypatch.setattr(cost, "check", lambda seconds, limits: found.append(seconds))
    parsed = chain.parse(segments)
    output = chain.output_for(parsed, "image/png")
    jp2header.answered(source, parsed, output, source.with_name("o"), LIMITS)
    width, height = Image.open(source).size
    return found[0] - cost.JPEG2000 * width * height / 1e6


@pytest.mark.parametrize("seed", SEEDS)
def test_a_jpeg2000_with_alpha_is_priced_as_the_engine_prices_it(
    tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    for case, mode in enumerate(["RGBA", "LA", "RGB"]):
        width, height = rng.randrange(400, 600), rng.randrange(400, 600)
        pixels = np.random.default_rng(seed).integers(0, 256, (height, width, len(mode)), np.uint8)
        picture = Image.fromarray(pixels[:, :, :2] if mode == "LA" else pixels, mode)
        source = tmp_path / f"s{case}.jp2"
        picture.save(source, "JPEG2000")
        segments = [f"sharpen=amount:{rng.randint(12, 20)}", f"resize=width:{width // 6}"]
        header = _priced(source, segments, monkeypatch)
        parsed = chain.parse(segments)
        output = chain.output_for(parsed, "image/png")
        with pillowformats.decoded(source, tmp_path / "o.png", LIMITS) as decoded:
            opened = frames.open_source(str(decoded), parsed, output, LIMITS, "sequential")
            engine = cost.estimate(opened, parsed, width, output.format)
        assert header == pytest.approx(engine, rel=0.02), (mode, header, engine)
