"""What librsvg draws is priced before it draws (``processing/svgdraw.py``): filter
primitives over their regions, ``<use>`` fan-out, elements, points and text. A load
probe's SVGs of a few hundred bytes (an ``feMorphology`` of radius 500, a blur of
stdDeviation 1000, a nest of ``<use>`` 10^4 wide) were estimated at 0.05-0.8 s and ran
to the 30 s deadline on every request.

Generated (seeded) SVGs of each kind: the job is refused at once, or its CPU time is
within a factor of its estimate; the probe's worst files are refused in well under a
second, without drawing; ordinary SVGs (icons, logos, charts, diagrams) stay small jobs.
The estimate is read without drawing from ``BigJob`` (every job is big when ``big_cost``
is 0), so a refused case never renders."""

from __future__ import annotations

import dataclasses
import math
import random
import resource
from collections.abc import Callable
from pathlib import Path
from unittest import mock

import pytest
import pyvips

from stowage import errors
from stowage.processing import chain, svgdash, svgstroke
from stowage.processing.base import BigJob, Limits, Output
from stowage.processing.vips import VipsEngine
from tests.processing import cpuspeed

HEAD = '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"'
LIMITS = Limits(100_000_000, 50 << 20, 10_000, 30, max_total_pixels=200_000_000)
MAX_COST = 2.0  # the generated cases: what would take longer is refused, not drawn
PNG, JPEG = Output("png", "image/png", "png"), Output("jpeg", "image/jpeg", "jpg")
CHAINS = ["resize=width:300", "output=format:png", "resize=width:200/blur=amount:5"]


def _canvas(w: int, h: int, body: str) -> str:
    return f'{HEAD} width="{w}" height="{h}">{body}</svg>'


def _filtered(w: int, h: int, primitives: str, region: str = "") -> str:
    return _canvas(
        w,
        h,
        f'<defs><filter id="f"{region}>{primitives}</filter></defs>'
        f'<rect width="{w}" height="{h}" fill="red" filter="url(#f)"/>',
    )


def _pass(rng: random.Random) -> str:
    """A filter primitive that passes over each pixel of its region (and the flood ``a``)."""
    kind = rng.randrange(3)
    if kind == 0:
        nodes = '<feMergeNode in="SourceGraphic"/>' * rng.randint(1, 8)
        return f"<feMerge>{nodes}</feMerge>"
    if kind == 1:
        return f'<feBlend in2="a" mode="{rng.choice(["multiply", "screen", "darken"])}"/>'
    operator = rng.choice(["over", "in", "arithmetic"])
    return f'<feComposite in2="a" operator="{operator}" k2="0.5" k3="0.5"/>'


def generated(kind: str, rng: random.Random) -> str:
    """One SVG of ``kind`` at a size and parameter drawn from ``rng``."""
    w, h = rng.choice([200, 400, 700, 1000]), rng.choice([200, 400, 700, 1000])
    if kind == "blur":
        sd = rng.choice([2, 30, 1000])
        return _filtered(w, h, f'<feGaussianBlur stdDeviation="{sd}"/>', ' x="-50%" width="200%"')
    if kind == "turbulence":
        octaves = rng.randint(1, 10)
        return _filtered(w, h, f'<feTurbulence baseFrequency="0.05" numOctaves="{octaves}"/>')
    if kind == "morphology":
        radius = rng.choice([1, 3, 10, 100])
        return _filtered(w, h, f'<feFlood/><feMorphology operator="dilate" radius="{radius}"/>')
    if kind == "convolve":
        k = rng.choice([3, 5, 9])
        ones = " ".join(["1"] * (k * k))
        return _filtered(w, h, f'<feFlood/><feConvolveMatrix order="{k}" kernelMatrix="{ones}"/>')
    if kind == "styled_filter":  # named by CSS in a style attribute, not by filter=""
        w, h, k = rng.choice([700, 1000]), rng.choice([700, 1000]), rng.choice([7, 9])
        ones = " ".join(["1"] * (k * k))
        return _canvas(
            w,
            h,
            f'<defs><filter id="f"><feFlood/><feConvolveMatrix order="{k}" kernelMatrix="{ones}"/>'
            f'</filter></defs><rect width="{w}" height="{h}" style="fill: red; filter: url(#f)"/>',
        )
    if kind == "use":
        depth, body = (
            rng.randint(2, 4),
            '<defs><rect id="g0" width="50" height="50" opacity="0.5"/>',
        )
        for i in range(1, depth + 1):
            uses = "".join(
                f'<use xlink:href="#g{i - 1}" x="{j * 3}" y="{j * 2}"/>' for j in range(10)
            )
            body += f'<g id="g{i}">{uses}</g>'
        return _canvas(w, h, f'{body}</defs><use xlink:href="#g{depth}"/>')
    if kind == "many_filtered":
        n = rng.randint(5, 200)
        circles = "".join(
            f'<circle cx="{rng.randint(0, w)}" cy="{rng.randint(0, h)}" '
            f'r="{rng.randint(5, w // 2)}" fill="blue" filter="url(#f)"/>'
            for _ in range(n)
        )
        blur = '<defs><filter id="f"><feGaussianBlur stdDeviation="10"/></filter></defs>'
        return _canvas(w, h, blur + circles)
    if kind == "polygons":
        n, points = rng.randint(100, 3000), rng.choice([5, 20])
        shapes = "".join(
            '<polygon fill-opacity="0.3" points="'
            + " ".join(f"{rng.randint(0, w)},{rng.randint(0, h)}" for _ in range(points))
            + '"/>'
            for _ in range(n)
        )
        return _canvas(w, h, shapes)
    if kind == "text":
        n = rng.randint(50, 1500)
        lines = "".join(
            f'<text x="{rng.randint(0, w)}" y="{rng.randint(0, h)}" '
            f'font-size="{rng.randint(10, 300)}">Hello world {i}</text>'
            for i in range(n)
        )
        return _canvas(w, h, lines)
    if kind == "layers":  # each group drawn on a surface of the canvas's size (seed 9716)
        side, n = rng.choice([1000, 2000, 3000]), rng.choice([50, 300])
        circles = "".join(
            f'<g opacity="0.9"><circle cx="{rng.randint(0, side)}" cy="{rng.randint(0, side)}" '
            f'r="{rng.randint(5, side // 2)}" fill="teal"/></g>'
            for _ in range(n)
        )
        return _canvas(side, side, circles)
    if kind == "composited":  # passes over each pixel: each feMergeNode, feBlend, feComposite
        passes = "".join(_pass(rng) for _ in range(rng.randint(1, 4)))
        flood = '<feFlood flood-color="red" flood-opacity="0.5" result="a"/>'
        rects = f'<rect width="{w}" height="{h}" fill="red" filter="url(#f)"/>'
        return _canvas(w, h, f'<defs><filter id="f">{flood}{passes}</filter></defs>' + rects * 4)
    assert kind == "pattern"
    return _canvas(
        w,
        h,
        '<defs><pattern id="p" width="2" height="2" patternUnits="userSpaceOnUse">'
        '<circle cx="1" cy="1" r="1"/></pattern></defs>'
        f'<rect width="{w}" height="{h}" fill="url(#p)"/>',
    )


def _estimate(source: Path, steps: str, limits: Limits, out: Path) -> float | None:
    """The engine's estimate, read before drawing (None: refused as too costly)."""
    output = JPEG if "format:jpg" in steps else PNG
    try:
        VipsEngine().render(source, chain.parse(steps.split("/")), output, out, limits)
    except BigJob as job:
        return float(job.args[0])
    except errors.ProcessingTooCostly:
        return None
    raise AssertionError("a job with big_cost 0 ran")


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def _drawn(source: Path, steps: str, limits: Limits, out: Path, estimated: float) -> float:
    """The CPU time of drawing ``source`` with no cost bound: the least of two drawings
    (one polygons case took 0.10-0.14 s from run to run), in the state the rates describe
    (cpuspeed.py: a clean-clone CI measured many_filtered 4.1-4.6 times under its
    estimate, 2.3-3.6 times on 2026-12-02 with today's prices)."""
    output = JPEG if "format:jpg" in steps else PNG
    runs = dataclasses.replace(limits, big_cost=math.inf)
    parsed = chain.parse(steps.split("/"))
    engine = VipsEngine(threads_per_job=1)
    used = cpuspeed.least(lambda: engine.render(source, parsed, output, out, runs))
    return used / speed_for(source, steps, limits, out, estimated)


def speed_for(source: Path, steps: str, limits: Limits, out: Path, estimated: float) -> float:
    """The machine's speed at this drawing's mix of work (cpuspeed.py): the share of its
    estimate that is cairo's tessellation, its outlines' crossings (``svgstroke``) and
    dashes (``svgdash``), read by pricing them at nothing, at the scan's speed; the rest
    at the blur's. (Sweep seed 16835 of test_svgrefs, 10 paths dashed ``0.25 0.25``:
    1.76 s of its 1.91 s estimate dashes, 0.56 s of CPU while the blur took 1.47 times
    its price and the scan 1.04.)"""
    crossings = mock.patch.multiple(svgstroke, CROSSING=0.0, FILL_CROSSING=0.0)
    with crossings, mock.patch.object(svgdash, "DASH", (0.0, 0.0)):
        untessellated = _estimate(source, steps, limits, out)
    scanned = min(max(estimated - (untessellated or 0.0), 0.0) / max(estimated, 1e-9), 1.0)
    return scanned * cpuspeed.speed("scan") + (1 - scanned) * cpuspeed.speed()


def assert_priced_within(estimated: float, used: float, *case: object) -> None:
    """Underpriced is what let a 286-byte SVG hold a slot for 30 s: at most 3x. Over: the
    canvas's own decode and save are priced as before (a fixed floor), at most 4x."""
    print(f"{case}: estimated {estimated:.2f} s, took {used:.2f} s")
    assert used <= 3 * estimated + 0.1, (*case, used, estimated)
    assert estimated <= 4 * used + 0.4, (*case, used, estimated)


def estimated_and_drawn(source: Path, steps: str, limits: Limits, out: Path) -> None:
    """A document's estimate, and its drawing's CPU within a factor of it; or a refusal
    read from the document alone (in less than a second of CPU)."""
    started = _cpu()
    estimated = _estimate(source, steps, limits, out)
    if estimated is None:  # refused from the document, without drawing
        assert _cpu() - started < 1.0
        return
    used = _drawn(source, steps, limits, out, estimated)
    assert_priced_within(estimated, used, source.name, steps)


def seeded(
    tmp_path: Path, generate: Callable[[str, random.Random], str], kind: str, seed: int
) -> tuple[Path, str, Path]:
    """``generate``'s SVG of ``kind`` for ``seed``, written; a chain drawn from the same
    generator; and where its output goes."""
    rng = random.Random(f"{kind}-{seed}")
    source, out = tmp_path / "s.svg", tmp_path / "out.png"
    source.write_text(generate(kind, rng))
    return source, rng.choice(["resize=width:300", "output=format:png"]), out


KINDS = ["blur", "turbulence", "morphology", "convolve", "styled_filter", "use", "many_filtered"]
KINDS += ["polygons", "text", "pattern", "layers", "composited"]


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_is_refused_or_within_a_factor(tmp_path: Path, kind: str, seed: int) -> None:
    rng = random.Random(f"{kind}-{seed}")
    source, out = tmp_path / "s.svg", tmp_path / "out.png"
    source.write_text(generated(kind, rng))
    steps = rng.choice(CHAINS)
    limits = dataclasses.replace(LIMITS, max_cost=MAX_COST, big_cost=0.0)
    estimated_and_drawn(source, steps, limits, out)


def _probe_files() -> dict[str, tuple[str, str]]:
    """The load probe's worst SVGs (its s5008_* and gen.py's, seeds kept), and a chain."""
    rng = random.Random(5003)
    heavy = [
        f'<circle cx="{rng.randint(0, 4000)}" cy="{rng.randint(0, 4000)}" '
        f'r="{rng.randint(0, 300)}" opacity="0.5" filter="url(#b)"/>'
        for _ in range(3000)
    ]
    blurred = '<defs><filter id="b"><feGaussianBlur stdDeviation="40"/>'
    blurred += '<feTurbulence baseFrequency="0.05" numOctaves="8"/></filter></defs>'
    polygons = [
        '<polygon fill-opacity="0.3" points="'
        + " ".join(f"{rng.randint(0, 8000)},{rng.randint(0, 8000)}" for _ in range(20))
        + '"/>'
        for _ in range(20000)
    ]
    nest = '<defs><rect id="g0" width="50" height="50" fill="blue" opacity="0.5"/>'
    for i in range(1, 5):
        uses = "".join(f'<use xlink:href="#g{i - 1}" x="{j * 3}" y="{j * 2}"/>' for j in range(10))
        nest += f'<g id="g{i}">{uses}</g>'
    many = '<defs><filter id="f"><feGaussianBlur stdDeviation="30"/></filter></defs>'
    many += "".join(
        f'<circle cx="{rng.randint(0, 1000)}" cy="{rng.randint(0, 1000)}" '
        f'r="{rng.randint(10, 500)}" fill="red" filter="url(#f)"/>'
        for _ in range(236)
    )
    layers = "".join(  # 500 canvas-wide layers: 26 s of CPU, estimated 3.6 (seed 9716)
        f'<g opacity="0.9"><circle cx="{rng.randint(0, 3000)}" cy="{rng.randint(0, 3000)}" '
        f'r="{rng.randint(1000, 1500)}" fill="teal"/></g>'
        for _ in range(500)
    )
    jpg = "output=format:jpg"
    morph = '<feTurbulence baseFrequency="0.05"/><feMorphology operator="dilate" radius="500"/>'
    return {
        "morph": (_filtered(4000, 8000, morph), jpg),
        "blur": (_filtered(8000, 4000, '<feGaussianBlur stdDeviation="1000"/>', ""), jpg),
        "turb": (
            _filtered(1000, 8000, '<feTurbulence baseFrequency="0.01" numOctaves="5"/>'),
            jpg,
        ),
        "use": (
            _canvas(8000, 2000, nest + '</defs><use xlink:href="#g4" transform="scale(80)"/>'),
            jpg,
        ),
        "manyblur": (_canvas(1000, 1000, many), "resize=width:800/" + jpg),
        "heavy": (_canvas(4000, 4000, blurred + "".join(heavy)), "resize=width:1000"),
        "poly": (_canvas(8000, 8000, "".join(polygons)), "resize=width:500"),
        "layers": (_canvas(3000, 3000, layers), jpg),
    }


PROBED = _probe_files()


@pytest.mark.parametrize("name", sorted(PROBED))
def test_the_probes_worst_svgs_are_refused_at_once(tmp_path: Path, name: str) -> None:
    """With the service's limits (8 s at most): each ran 9 s to past the 30 s deadline."""
    document, steps = PROBED[name]
    source = tmp_path / "s.svg"
    source.write_text(document)
    limits = dataclasses.replace(LIMITS, max_cost=8.0, big_cost=0.0)

    def refuse() -> None:
        assert _estimate(source, steps, limits, tmp_path / "out.png") is None

    # CPU, not wall time (the machine is shared), the least of two, in the rates' state.
    # Reading the 8000x8000 polygons' document (4.6 MB, 20,000 elements, read in Python)
    # takes 1.7-1.8 s of CPU on a quiet machine (1.8-1.9 in the rates' state); a
    # clean-clone CI on the loaded machine measured 1.78 s at a speed of 0.69 (2.6: the
    # blur the speed is measured by ran fast, the Python reading did not). Drawing them
    # took 9 s to 30 s: a refusal that draws fails the bound whatever the machine's state.
    assert cpuspeed.least(refuse) / cpuspeed.speed() < 3.5


def _ordinary(rng: random.Random) -> list[str]:
    """Icons, a logo with a drop shadow, charts, a diagram of symbols, a map-like path."""
    icon = "".join(
        f'<path d="M{rng.randint(0, 24)} {rng.randint(0, 24)} '
        + " ".join(f"L{rng.randint(0, 24)} {rng.randint(0, 24)}" for _ in range(12))
        + ' Z" fill="#333"/>'
        for _ in range(6)
    )
    shadow = (
        '<defs><filter id="s" x="-20%" y="-20%" width="140%" height="140%">'
        '<feGaussianBlur in="SourceAlpha" stdDeviation="4"/><feOffset dx="3" dy="3"/>'
        '<feMerge><feMergeNode/><feMergeNode in="SourceGraphic"/></feMerge></filter>'
        '<linearGradient id="g"><stop offset="0" stop-color="red"/>'
        '<stop offset="1" stop-color="blue"/></linearGradient></defs>'
    )
    logo = shadow + (
        '<rect x="20" y="20" width="360" height="160" rx="20" fill="url(#g)" filter="url(#s)"/>'
        '<text x="200" y="110" font-size="48" text-anchor="middle" fill="white">Stowage</text>'
    )
    bars = "".join(
        f'<rect x="{40 + i * 7}" y="{500 - (v := rng.randint(10, 450))}" width="5" '
        f'height="{v}" fill="steelblue"/><text x="{40 + i * 7}" y="520" font-size="8">{i}</text>'
        for i in range(100)
    )
    line = " ".join(f"{i},{300 + rng.randint(-200, 200)}" for i in range(0, 800, 1))
    symbols = '<defs><symbol id="n"><circle cx="20" cy="20" r="18" fill="gold" stroke="black"/>'
    symbols += '<text x="8" y="25" font-size="12">node</text></symbol></defs>'
    symbols += "".join(
        f'<use xlink:href="#n" x="{rng.randint(0, 900)}" y="{rng.randint(0, 600)}"/>'
        for _ in range(60)
    )
    # a coastline's short steps (3,000 random lines across the canvas, which cross each
    # other a million times, took 1.06 s: no ordinary drawing, ``svgstroke``)
    coast = "M600 400 " + " ".join(
        f"l{rng.randint(-12, 12)} {rng.randint(-12, 12)}" for _ in range(3000)
    )
    return [
        f'{HEAD} viewBox="0 0 24 24" width="512" height="512">{icon}</svg>',
        _canvas(400, 200, logo),
        _canvas(800, 600, bars + '<line x1="40" y1="500" x2="760" y2="500" stroke="black"/>'),
        _canvas(800, 600, f'<polyline points="{line}" fill="none" stroke="red"/>'),
        _canvas(1000, 700, symbols),
        _canvas(1200, 800, f'<path d="{coast}" fill="none" stroke="#036" stroke-width="0.5"/>'),
    ]


@pytest.mark.parametrize("seed", range(3))
def test_ordinary_svgs_stay_small_jobs(tmp_path: Path, seed: int) -> None:
    """With the service's limits (a big job past 1 s): the drawing's price does not
    make an icon, a logo, a chart or a diagram a big job, nor refuse it; they draw."""
    for index, document in enumerate(_ordinary(random.Random(seed))):
        source, out = tmp_path / f"{index}.svg", tmp_path / f"{index}.png"
        source.write_text(document)
        parsed = chain.parse(["resize=width:400"])
        limits = dataclasses.replace(LIMITS, max_cost=8.0, big_cost=1.0)
        VipsEngine().render(source, parsed, PNG, out, limits)  # BigJob past 1 s
        assert pyvips.Image.new_from_file(str(out)).width == 400
