"""A plain drawing (flat paint only: ``svgdraw.Drawing.plain``) saved as PNG is priced
at the flat save rate (``saverates.DRAWN_FLAT``), without drawing it: its time follows
its edges, which the drawing's price has paid for. Any gradient, pattern or filter in it
keeps a photo's rate, as do the other formats and a chain that makes new colours.

Before: every drawing's PNG was priced as a photo's (0.13 s a megapixel); an empty
2500x2500 canvas was estimated 0.91 s for 0.11 of CPU, 300 translucent circles on it
1.05 s for 0.19."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest

from stowage.processing import chain, saverates
from stowage.processing.base import BigJob, Output
from stowage.processing.vips import VipsEngine
from tests.processing.test_svgcost import LIMITS, _canvas

PNG, WEBP = Output("png", "image/png", "png"), Output("webp", "image/webp", "webp")
UNPLAIN = [
    '<defs><linearGradient id="g"><stop offset="0"/><stop offset="1"/></linearGradient></defs>',
    '<defs><radialGradient id="g"><stop offset="0"/></radialGradient></defs>',
    '<defs><pattern id="p" width="4" height="4"><rect width="2" height="2"/></pattern></defs>',
    '<defs><filter id="f"><feFlood flood-color="red"/></filter></defs>',
]


def _plain(rng: random.Random) -> tuple[int, int, str]:
    width, height = rng.randint(1000, 3000), rng.randint(1000, 3000)
    shapes = []
    for _ in range(rng.randint(1, 300)):
        x, y, r = rng.randrange(width), rng.randrange(height), rng.randint(5, 400)
        colour = f"#{rng.randrange(16**6):06x}"
        shapes.append(
            rng.choice(
                [
                    f'<circle cx="{x}" cy="{y}" r="{r}" fill="{colour}" fill-opacity="0.5"/>',
                    f'<rect x="{x}" y="{y}" width="{r}" height="{r}" fill="{colour}"/>',
                    f'<text x="{x}" y="{y}" font-size="{r // 4 + 5}" fill="{colour}">ab</text>',
                    f'<line x1="{x}" y1="{y}" x2="{r}" y2="{r}" stroke="{colour}"/>',
                ]
            )
        )
    return width, height, "".join(shapes)


def _estimate(tmp_path: Path, text: str, steps: str, output: Output) -> float:
    source = tmp_path / "drawing.svg"
    source.write_text(text)
    limits = dataclasses.replace(LIMITS, max_cost=1000.0, big_cost=0.0)
    parsed = chain.parse(steps.split("/"))
    with pytest.raises(BigJob) as raised:
        VipsEngine().render(source, parsed, output, tmp_path / "out", limits)
    return float(raised.value.args[0])


@pytest.mark.parametrize("seed", [5537, 5538, 5539])
def test_a_plain_drawing_is_saved_as_png_at_the_flat_rate(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    width, height, shapes = _plain(rng)
    plain = _canvas(width, height, shapes)
    unplain = _canvas(width, height, rng.choice(UNPLAIN) + shapes)
    apart = (saverates.SAVE["png"] - saverates.FLAT["png"]) * width * height / 1e6
    flat, photo = (_estimate(tmp_path, t, "output=format:png", PNG) for t in (plain, unplain))
    assert photo - flat == pytest.approx(apart, rel=0.01)
    # a blur makes new colours along every edge; WebP's time follows more than edges
    for steps, output in (("blur=amount:2", PNG), ("output=format:webp", WEBP)):
        assert _estimate(tmp_path, plain, steps, output) == pytest.approx(
            _estimate(tmp_path, unplain, steps, output), rel=1e-6
        )
