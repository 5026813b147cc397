"""An SVG polygon's fill is priced by the area it covers (``svgdraw.FILL`` over its
shoelace area, at most its box within the canvas), besides its points.

Before: polygons were priced per point only; 2,000 translucent triangles across a
2000x2000 canvas were estimated 0.73 s and took 3.5 s of CPU, 5,000 across 1000x1000
0.53 s for 2.2 (now 3.5 s for 2.7, and 2.2 for 2.1)."""

from __future__ import annotations

import dataclasses
import functools
import math
import random
from pathlib import Path

import pytest

from stowage.processing import chain, svgarea
from stowage.processing.svgrefs import NUMBER
from stowage.processing.vips import VipsEngine
from tests.processing import cpuspeed
from tests.processing.test_svgcost import LIMITS, PNG, _canvas, _estimate


def _polygons(rng: random.Random) -> str:
    """Large polygons of few points across (and past) the canvas, some translucent."""
    side = rng.choice([700, 1000, 1500, 2000])
    count, points = rng.randint(300, 3000), rng.randint(3, 6)
    reach = side // 4
    shapes = "".join(
        f'<polygon fill-opacity="{rng.choice(["0.3", "0.6", "1"])}" points="'
        + " ".join(
            f"{rng.randint(-reach, side + reach)},{rng.randint(-reach, side + reach)}"
            for _ in range(points)
        )
        + '"/>'
        for _ in range(count)
    )
    return _canvas(side, side, shapes)


@pytest.mark.parametrize("seed", [5264, 5265])
def test_large_polygons_are_priced_by_their_area(tmp_path: Path, seed: int) -> None:
    """Within three times their CPU time either way (CPU time normalised by cpuspeed)."""
    rng = random.Random(seed)
    for case in range(2):
        source, out = tmp_path / f"s{case}.svg", tmp_path / "out.png"
        source.write_text(_polygons(rng))
        limits = dataclasses.replace(LIMITS, max_cost=1000.0, big_cost=0.0)
        estimated = _estimate(source, "output=format:png", limits, out)
        assert estimated is not None
        runs = dataclasses.replace(limits, big_cost=math.inf)
        parsed = chain.parse(["output=format:png"])
        render = functools.partial(
            VipsEngine(threads_per_job=1).render, source, parsed, PNG, out, runs
        )
        used = cpuspeed.least(render, times=1)
        used /= cpuspeed.speed()
        print(f"case {case}: estimated {estimated:.2f} s, took {used:.2f}")
        assert used <= 3 * estimated + 0.1, (used, estimated)
        assert estimated <= 3 * used + 0.4, (used, estimated)


def _point_list(rng: random.Random) -> str:
    """Points as SVG writes them, and as it may: signs, exponents, numbers run together."""
    pieces = ["1", "-2.5", ".5", "3.", "+4", "1e3", "2E-2", "1.2.3", "1-2", "7e", "e", ""]
    pieces += [str(rng.uniform(-1e4, 1e4)) for _ in range(4)]
    seps = [" ", ",", ", ", "\n", "\t", "  ,", ""]
    return "".join(rng.choice(pieces) + rng.choice(seps) for _ in range(rng.randint(0, 12)))


@pytest.mark.parametrize("seed", [5376, 5377])
def test_points_are_read_as_the_pattern_reads_them(seed: int) -> None:
    """``numbers_in``'s split (for speed) reads what ``NUMBER`` does, numbers run together
    and malformed ones included."""
    rng = random.Random(seed)
    for _ in range(3000):
        text = _point_list(rng)
        assert svgarea.numbers_in(text) == [float(n) for n in NUMBER.findall(text)], text
