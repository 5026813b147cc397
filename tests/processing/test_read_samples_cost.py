"""A source whose samples ``samples.read`` converts (32-bit integers, floats) is priced
with the conversion (``samples.RATE``), which is computed again with the first task.

Before: only the decode was priced, as for any source; a 5 MP float scRGB TIFF blurred
by 20 took 0.42 s of CPU for an estimate of 0.23, saved as it is 0.19 for 0.12 (within
the estimate's factor of three, but the conversion unpriced: 0.01-0.03 s a megapixel)."""

from __future__ import annotations

import functools
import random
from pathlib import Path

import numpy as np
import pytest
import pyvips

from stowage.processing import chain, cost, frames, samples
from tests.processing import cpuspeed
from tests.processing.test_cost import LIMITS


def _source(path: Path, rng: random.Random) -> pyvips.Image:
    """A float, uint32 or int32 TIFF at ``path``; the same picture in 16 bits returned."""
    width, height = rng.randrange(2000, 2600), rng.randrange(1800, 2200)
    levels = np.random.default_rng(rng.randrange(1 << 30)).integers(0, 60000, (height, width, 3))
    base = pyvips.Image.new_from_array(levels.astype(np.uint16))
    kind = rng.choice(["float", "uint32", "int32"])
    if kind == "float":
        image = (base.cast("float") / 65535).copy(interpretation="scrgb")
    elif kind == "uint32":
        image = base.cast("uint") * 65537
    else:
        image = base.cast("int") * 30000
    image.tiffsave(str(path))
    return base.copy(interpretation="rgb16")


def _estimate(source: Path, segments: list[str]) -> float:
    parsed = chain.parse(segments)
    output = chain.output_for(parsed, "image/png")
    opened = frames.open_source(str(source), parsed, output, LIMITS, "sequential")
    return cost.estimate(opened, parsed, opened.image.width, output.format)


def _read(source: Path) -> None:
    """The source decoded and read as the engine reads it, as a stream."""
    image = pyvips.Image.new_from_file(str(source), access="sequential")
    samples.read(image, source).avg()


def _converted(source: Path, plain: Path, fresh: bool) -> float:
    """What reading ``source`` costs over reading ``plain``, on one thread, in the rates'
    state."""
    threads = pyvips.concurrency_get()
    pyvips.concurrency_set(1)
    try:
        spent = cpuspeed.least(functools.partial(_read, source), times=3)
        spent -= cpuspeed.least(functools.partial(_read, plain), times=3)
    finally:
        pyvips.concurrency_set(threads)
    return spent / cpuspeed.speed(fresh=fresh)


def _fits(priced: float, spent: float) -> bool:
    return priced >= spent / 2


@pytest.mark.parametrize("seed", [5266, 5267])
def test_a_converted_source_is_priced_with_its_conversion(tmp_path: Path, seed: int) -> None:
    """The estimate grows, against the same picture as 16 bits, by at least half what the
    conversion measures (CPU time in the rates' state, ``cpuspeed``)."""
    rng = random.Random(seed)
    for case in range(3):
        source, plain = tmp_path / f"s{case}.tif", tmp_path / f"p{case}.tif"
        levels = _source(source, rng)
        levels.tiffsave(str(plain))
        blur = f"blur=amount:{rng.randint(5, 20)}"
        segments = rng.choice([["output=format:tiff"], [blur, "output=format:jpg"]])
        priced = _estimate(source, segments) - _estimate(plain, segments)
        converted = functools.partial(_converted, source, plain)
        fits = functools.partial(_fits, priced)
        spent = cpuspeed.measured_again(converted, fits)
        print(f"{segments}: priced {priced:.3f} s more, the conversion took {spent:.3f}")
        assert priced >= spent / 2 and priced > 0, (segments, priced, spent)
