"""What an SVG element draws again for each element that refers to it is priced as many
times (``processing/svgdraw.py``, ``_referred``): a clip path's and a mask's content for
each element clipped or masked, a pattern's for each shape it fills or strokes (also
when the fill is inherited from a group), a marker's at each vertex of the line it
marks.

A red-team probe (2026-12-03) found them priced once, or not at all: a 55 KB SVG of
200 rects clipped by 200 polygons was estimated at 0.19 s and took 17.8 s of CPU; one
of 200 rects masked by a blurred canvas ran to the deadline (estimated 0.17 s); a
polyline of 400 vertices marked by a blurred circle took 3.6 s (estimated 0.12 s); 100
rects filtered by an ``feImage`` of 200 polygons took 4.7 s (estimated 0.6 s); 10 paths
of 500 segments dashed ``0.1 0.1`` ran to the deadline (estimated 0.32 s); a radial
gradient of 20,000 stops filling 100 rects: 1.2 s a rect at 300 px (estimated 0.11 s in
all).

The same drawn through ``<style>`` rules (``processing/svgcss.py``): 200 rects clipped
through ``rect { clip-path: url(#c) }`` were estimated at 0.15 s and took 16.7 s.

Generated (seeded) SVGs of each kind: refused at once, or drawn within a factor of the
estimate (as ``test_svgcost.py`` holds the other kinds)."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest

from stowage.processing import chain
from stowage.processing.vips import VipsEngine
from tests.processing.test_svgcost import (
    LIMITS,
    MAX_COST,
    PNG,
    _canvas,
    estimated_and_drawn,
    seeded,
)

SEEDS = range(5315, 5320)
KINDS = [
    "clip",
    "mask",
    "marker",
    "pattern",
    "css_clip",
    "css_filter",
    "css_pattern",
    "feimage",
    "dash",
    "gradient",
]


MARKED = {
    "style": 'style="marker: url(#m)"',
    "attributes": 'marker-start="url(#m)" marker-mid="url(#m)" marker-end="url(#m)"',
    "rule": "",
    "attribute": 'marker="url(#m)"',
}


def _polygons(rng: random.Random, count: int, w: int, h: int) -> str:
    return "".join(
        '<polygon points="'
        + " ".join(f"{rng.randint(0, w)},{rng.randint(0, h)}" for _ in range(20))
        + '"/>'
        for _ in range(count)
    )


def generated(kind: str, rng: random.Random) -> str:
    """One SVG of ``kind``: content defined once, drawn for each element referring to it."""
    w, h = rng.choice([300, 500, 800]), rng.choice([300, 500, 800])
    if kind == "clip":
        clip = f'<defs><clipPath id="c">{_polygons(rng, rng.randint(10, 80), w, h)}</clipPath>'
        rects = "".join(
            f'<rect width="{w}" height="{h}" fill="green" clip-path="url(#c)"/>'
            for _ in range(rng.randint(10, 120))
        )
        return _canvas(w, h, clip + "</defs>" + rects)
    if kind == "mask":
        sd = rng.choice([3, 10, 30])
        mask = (
            f'<defs><filter id="f"><feGaussianBlur stdDeviation="{sd}"/></filter>'
            f'<mask id="m" maskUnits="userSpaceOnUse" x="0" y="0" width="{w}" height="{h}">'
            f'<rect width="{w}" height="{h}" fill="white" filter="url(#f)"/></mask></defs>'
        )
        rects = "".join(
            f'<rect x="{rng.randint(0, w // 2)}" y="{rng.randint(0, h // 2)}" width="{w // 2}" '
            f'height="{h // 2}" fill="blue" style="mask: url(#m)"/>'
            for _ in range(rng.randint(5, 60))
        )
        return _canvas(w, h, mask + rects)
    if kind == "marker":
        marker = (
            '<defs><marker id="m" markerWidth="40" markerHeight="40" markerUnits="userSpaceOnUse">'
            f"{_polygons(rng, rng.randint(1, 8), 40, 40)}</marker></defs>"
        )
        points = " ".join(
            f"{rng.randint(0, w)},{rng.randint(0, h)}" for _ in range(rng.randint(100, 3000))
        )
        # marked how: librsvg draws no marker for a ``marker`` attribute (a style only)
        marked = rng.choice(list(MARKED))
        style = "<style>polyline { marker: url(#m) }</style>" if marked == "rule" else ""
        polyline = f'<polyline fill="{rng.choice(["none", "teal"])}" points="{points}"'
        return _canvas(w, h, style + marker + f"{polyline} {MARKED[marked]}/>")
    if kind == "css_clip":  # chosen by a rule of the last compound of its selector
        clip = f'<defs><clipPath id="c">{_polygons(rng, rng.randint(10, 80), w, h)}</clipPath>'
        rects = "".join(
            f'<rect class="x{i % 3}" width="{w}" height="{h}"/>'
            for i in range(rng.randint(10, 120))
        )
        rule = rng.choice(["rect", ".x0, .x1, .x2", "svg > rect[width]", "*:first-child, rect"])
        return _canvas(w, h, f"<style>{rule} {{ clip-path: url(#c) }}</style>{clip}</defs>{rects}")
    if kind == "css_filter":
        sd = rng.choice([3, 10, 30])
        blur = f'<defs><filter id="f"><feGaussianBlur stdDeviation="{sd}"/></filter></defs>'
        circles = "".join(
            f'<circle class="a" cx="{rng.randint(0, w)}" cy="{rng.randint(0, h)}" '
            f'r="{rng.randint(5, w // 2)}"/>'
            for _ in range(rng.randint(5, 150))
        )
        # (librsvg 2.6x skips a rule in @media, or with !important: matched too, high)
        style = "<style>/* .b { filter: none } */ .a { fill: red; filter: url(#f) }</style>"
        return _canvas(w, h, style + blur + circles)
    if kind == "css_pattern":  # the group's rule, inherited by each rect
        pattern = (
            f'<defs><pattern id="p" patternUnits="userSpaceOnUse" width="{w}" height="{h}">'
            f"{_polygons(rng, rng.randint(10, 80), w, h)}</pattern></defs>"
        )
        rects = "".join(f'<rect width="{w}" height="{h}"/>' for _ in range(rng.randint(10, 120)))
        style = '<style>g#g { stroke: none; fill: url("#p") }</style>'
        return _canvas(w, h, style + pattern + f'<g id="g">{rects}</g>')
    if kind == "feimage":  # a filter drawing an element, for each element filtered
        heavy = f'<g id="h">{_polygons(rng, rng.randint(10, 80), w, h)}</g>'
        rects = "".join(
            f'<rect width="{w}" height="{h}" filter="url(#f)"/>' for _ in range(rng.randint(5, 60))
        )
        image = '<filter id="f"><feImage xlink:href="#h"/></filter>'
        return _canvas(w, h, f"<defs>{heavy}{image}</defs>{rects}")
    if kind == "dash":  # each dash a shape of its own; dashed how is drawn from rng
        period, width = rng.choice([0.2, 0.5, 2, 8]), rng.choice([1, 4, 20])
        dashed = f"stroke-dasharray:{period / 2} {period / 2};stroke-width:{width}"
        paths = "".join(
            f'<path d="M{rng.randint(0, w)} {rng.randint(0, h)} '
            + " ".join(
                f"{rng.choice('Ll')}{rng.randint(0, w // 2)} {rng.randint(0, h // 2)}"
                for _ in range(rng.randint(10, 300))
            )
            + '"/>'
            for _ in range(rng.randint(1, 8))
        )
        how = rng.choice(["style", "group", "css"])
        if how == "style":
            paths = paths.replace("<path ", f'<path style="{dashed}" ')
        elif how == "group":
            paths = f'<g stroke-dasharray="{period / 2}" stroke-width="{width}">{paths}</g>'
        else:
            paths = f"<style>path {{ {dashed} }}</style>{paths}"
        return _canvas(w, h, f'<g fill="none" stroke="black">{paths}</g>')
    if kind == "gradient":  # stops given by a linear gradient to a radial one (href)
        n = rng.choice([800, 2000, 5000])
        stops = "".join(
            f'<stop offset="{i / n:.5f}" stop-color="#{rng.randint(0, 0xFFFFFF):06x}"/>'
            for i in range(n)
        )
        grad = f'<linearGradient id="a">{stops}</linearGradient>'
        grad += '<radialGradient id="g" xlink:href="#a"/>'
        rects = "".join(
            f'<rect width="{w}" height="{h}" fill="url(#g)"/>' for _ in range(rng.randint(2, 10))
        )
        return _canvas(w, h, f"<defs>{grad}</defs>{rects}")
    assert kind == "pattern"  # inherited from the group by each rect
    pattern = (
        f'<defs><pattern id="p" patternUnits="userSpaceOnUse" width="{w}" height="{h}">'
        f"{_polygons(rng, rng.randint(10, 80), w, h)}</pattern></defs>"
    )
    rects = "".join(
        f'<rect width="{w}" height="{h}" opacity="0.9"/>' for _ in range(rng.randint(10, 120))
    )
    return _canvas(w, h, pattern + f'<g fill="url(#p)">{rects}</g>')


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("kind", KINDS)
def test_referred_content_is_priced_each_time_it_is_drawn(
    tmp_path: Path, kind: str, seed: int
) -> None:
    source, steps, out = seeded(tmp_path, generated, kind, seed)
    limits = dataclasses.replace(LIMITS, max_cost=MAX_COST, big_cost=0.0)
    estimated_and_drawn(source, steps, limits, out)


def test_a_styled_drawing_of_gradients_and_a_shadow_stays_a_small_job(tmp_path: Path) -> None:
    """An exported drawing: classes filling hundreds of paths with gradients, one
    shadow chosen by a rule, is not made a big job by what its rules draw."""
    rng = random.Random(5320)
    style = (
        "<style>.cls-1{fill:url(#g1);}.cls-2{fill:url(#g2);stroke:#000}"
        ".cls-3{filter:url(#s);fill:#fff}</style>"
    )
    defs = (
        '<defs><linearGradient id="g1"><stop offset="0" stop-color="red"/>'
        '<stop offset="1" stop-color="blue"/></linearGradient>'
        '<radialGradient id="g2"><stop offset="0" stop-color="#ff0"/>'
        '<stop offset="1" stop-color="#0f0"/></radialGradient>'
        '<filter id="s"><feGaussianBlur in="SourceAlpha" stdDeviation="3"/>'
        '<feOffset dx="2" dy="2"/><feMerge><feMergeNode/><feMergeNode in="SourceGraphic"/>'
        "</feMerge></filter></defs>"
    )
    paths = "".join(
        f'<path class="cls-{1 + i % 2}" d="M{rng.randint(0, 800)} {rng.randint(0, 600)} '
        + " ".join(f"L{rng.randint(0, 800)} {rng.randint(0, 600)}" for _ in range(8))
        + ' Z"/>'
        for i in range(300)
    )
    card = '<rect class="cls-3" x="300" y="200" width="200" height="100"/>'
    source, out = tmp_path / "s.svg", tmp_path / "out.png"
    source.write_text(_canvas(800, 600, style + defs + paths + card))
    limits = dataclasses.replace(LIMITS, max_cost=8.0, big_cost=1.0)
    VipsEngine().render(source, chain.parse(["resize=width:400"]), PNG, out, limits)
    assert out.stat().st_size > 0
