"""What saving a result costs: seconds a megapixel by format, content and quality.

``cost.estimate`` adds the save to a chain's work with these; they are measured on one
thread (docs/decisions.md, "Save rates").
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

from stowage.processing import catalogue
from stowage.processing.base import Chain, Task
from stowage.processing.flatness import BLOCKS, COLOURS, DETAIL, Content

#: Seconds a megapixel for a format not named here.
OTHER = 0.05
#: Seconds a megapixel of the result costs to save, a photo's (GIF: a palette a frame).
#: AVIF's is below a textured photo's, so that a 12-megapixel photo is admitted. PNG's at
#: ``vips.save_options``' options, one thread, 2000x2000: noise 0.107-0.129, a textured
#: photo 0.115-0.129, smooth 0.036, upscaled 0.13-0.22 (at 0.09 a 320x240 PNG of noise
#: upscaled to 7000x7000 took 10.5 s, estimated 5.7). docs/decisions.md, "Save rates".
LOSSLESS_WEBP = "webp-lossless"  # a lossless WebP source's result (webpheader): 0.17-0.68
SAVE = {"jpeg": 0.01, "png": 0.13, "webp": 0.16, "gif": 0.8, "avif": 0.5, "tiff": 0.01}
SAVE[LOSSLESS_WEBP] = 0.6
#: Before a lossy save with alpha, the transparent pixels' fill (``ops.hidden_filled``):
#: 0.047 s a megapixel of noise with alpha, one thread; charged whatever the alpha.
HIDDEN_FILL = {"webp": 0.05, "avif": 0.05, LOSSLESS_WEBP: 0.05}
#: Seconds a megapixel of random noise costs to save, for the encoders whose time grows
#: with the detail they are given; between a photo's and this by ``detail`` (detail.py).
#: PNG's rate is already a textured photo's, which noise matches.
SAVE_NOISE = {"avif": 1.2, "webp": 0.25, "gif": 1.0, "jpeg": 0.01}
#: AVIF's save time by the quality asked, against its default (50), by which its rates
#: are: libaom at effort 2, one thread, 1600x1200 (2026-12-02; a textured photo, a smooth
#: one, noise): 70 1.12/1.06/1.17, 80 1.21/1.34/1.20, 90 1.38/1.57/2.39, 95 1.64/1.40/2.66,
#: 100 2.10/2.63/1.73; a 12 MP photo 5.4 s at 50, 10.3 s at 100. Straight lines between.
#: Below 50 it is faster (0.77-0.9 at 30), still priced at 1.
AVIF_QUALITY = ((50, 1.0), (70, 1.15), (80, 1.25), (90, 1.6), (95, 1.9), (100, 2.2))
#: JPEG's save time by how it is coded, against the baseline's rate (``SAVE``, which holds
#: for a baseline JPEG at any quality), as (a photo's, noise's) below quality 90, from 90
#: to 99 and at 100. A progressive JPEG (``pjpg``: ``interlace``) codes every
#: coefficient in several scans with tables made for them; optimised tables
#: (``compress``: ``optimize_coding``) cost a second pass; from quality 90 libvips keeps
#: the chroma whole (4:4:4), twice the coefficients, and at 100 a photo's are nearly all
#: non-zero. Measured (2026-12-07, one thread, 2000x1500, normalised by cpuspeed), seconds
#: a megapixel at quality 50-85 / 90-95 / 100: baseline noise 0.0035-0.0044 / 0.009 /
#: 0.011, a photo 0.0024 / 0.004 / 0.007; optimised noise 0.010-0.014 / 0.028-0.029 /
#: 0.033, a photo 0.005-0.006 / 0.012-0.013 / 0.023; progressive (with optimised tables
#: the same) noise 0.020-0.032 / 0.068 / 0.062, a photo 0.010-0.012 / 0.021-0.023 /
#: 0.043-0.045. ``pjpg=quality:100`` of 12 MP of noise took 0.97 s, estimated 0.3.
JPEG_CODING = {
    "progressive": ((1.2, 3.5), (2.3, 7.0), (4.5, 7.0)),
    "optimized": ((1.0, 1.5), (1.3, 3.5), (2.3, 3.5)),
}
WHOLE_CHROMA_FROM = 90  # libvips' jpegsave: 4:4:4 from this quality up, 4:2:0 below
DEFAULT_QUALITY = 75  # libvips' jpegsave and webpsave default
#: The same for a CMYK JPEG (``output=colorspace:cmyk``, or ``input`` of a CMYK source),
#: whose four bands are all kept whole, the baseline's included: measured the same way,
#: noise 0.010-0.013 / 0.012-0.014 / 0.018 baseline, 0.036-0.041 / 0.043-0.044 / 0.045
#: optimised, 0.079-0.107 / 0.108-0.111 / 0.100 progressive; a photo 0.007-0.008 /
#: 0.008-0.010 / 0.012, 0.019-0.029 / 0.029-0.035 / 0.047, 0.042-0.057 / 0.060-0.069 /
#: 0.107. A 12 MP CMYK JPEG to ``output=format:pjpg,colorspace:input`` took 3.8 times its
#: estimate priced as RGB.
JPEG_CMYK_CODING = {
    "baseline": ((0.9, 1.4), (1.0, 1.4), (1.3, 1.8)),
    "progressive": ((5.7, 10.7), (6.9, 11.1), (10.7, 11.1)),
    "optimized": ((2.9, 4.1), (3.5, 4.4), (4.7, 4.7)),
}
#: Seconds a megapixel of the result to make it CMYK before the save (``icc_transform``,
#: LittleCMS): 0.021 for noise and photos.
CMYK_EXPORT = 0.022
#: A TIFF with ``compress`` (deflate, zlib's default level), against ``SAVE``'s uncompressed
#: one: 0.032-0.040 s a megapixel of noise, photos, smooth and upscaled ones, 0.046 with
#: alpha, 0.002 for flat areas (one thread, 2000x1500 and 4000x3000, normalised); 0.0014-0.0026
#: uncompressed. Priced at 0.01 it was under its time two to five times.
DEFLATED_TIFF = 4.0
#: The same for the frames of an animation: GIF's frames each quantised to a palette of
#: their own cost more than a still's pixels: noise 1.38-1.47 s a megapixel in frames of
#: 400x300 to 1000x1000, 1.93 in frames of 100x75, against 0.65-0.75 for a still of
#: 2000x2000 (50 frames of 400x300 noise resized to 399 took 8.9-20 s, estimated 6.6).
SAVE_NOISE_FRAMES = {"gif": 1.5}
#: Seconds of a save at a photo's rate past which the source's detail is measured: below
#: it, even noise's rate would keep the job small, and the measure is not worth its time.
MEASURE_ABOVE = 0.3
#: Seconds a megapixel of a flat result (one colour over areas, ``flatness.py``), and the
#: measure that finds it: measured (one thread, 2000x1500, 2026-12-02) on blocks of a few
#: colours, text-like strokes and screenshots: GIF 0.069-0.092, AVIF 0.074-0.097 (blocks;
#: text costs a photo's), WebP 0.057, PNG 0.021-0.033; a margin above the most. A 12 MP
#: screenshot to GIF was estimated 9.96 s and refused, for 0.6 s of work.
FLAT = {"gif": 0.11, "avif": 0.11, "webp": 0.07, "png": 0.04}
FLAT_MEASURE = {"gif": COLOURS, "avif": BLOCKS, "webp": BLOCKS, "png": BLOCKS}
#: The formats that save a plain drawing (``svgdraw.Drawing.plain``: flat paint, no
#: filter, pattern, gradient or image) at ``FLAT``'s rate, known flat without drawing it.
#: PNG's time follows the edges, each of which the drawing's price has paid more for
#: (0.35 us a row of a fill, 0.6 a pixel of stroke, against 0.13 a pixel of noise
#: saved); text-like strokes are within its flat rate. Not GIF (its time follows the
#: colours, which translucent shapes multiply), nor AVIF (text costs it a photo's).
#: Measured (one thread, 2026-12-06, divided by cpuspeed's blur factor on a machine
#: whose flat saves and fills ran 2-3 times faster beside its blur than where the rates
#: were measured, so up to that much lower than there): an empty canvas drawn and saved
#: 0.019 s a megapixel, a grey one 0.017, 300-1,400 translucent circles, ellipses and
#: turned rects 0.02-0.04 besides their drawing; priced at a photo's rate (0.13), their
#: estimates were 3 to 9 times their CPU time.
DRAWN_FLAT = frozenset({"png"})
#: Seconds a megapixel to save a GIF's frames as GIF again, as (least, more at the
#: densest): more by how densely the source's frames are coded (``gifblocks.coded_density``
#: over ``DENSE``, at most 1), which follows how irregular their colours are. ``KEPT``:
#: the chain moves pixels (flip, flop, crop, a turn by a right angle) or maps each colour
#: to one (negative, monochrome, blackwhite, sepia, modulate), so a frame's colours stay
#: a palette's. ``MADE``: it makes new colours (a resample, a blur, an edge), in frames.
#: Measured on one thread (2026-12-05, in the rates' state, tests/processing/cpuspeed.py),
#: the save alone, frames of 400x300 and 480x270: flat drawings and screen captures
#: (density 0.02) 0.07-0.10 kept, 0.08-0.29 made; synthetic video (0.1) 0.09-0.13 and
#: 0.40-0.47; a photo panned or still with a part moving (0.63-0.64) 0.40-0.46 and
#: 0.63-0.89, a textured one (0.76-0.8) 0.10-0.62 and 1.61-1.69, noise (1.4) 0.14-0.70
#: and 0.95-1.83. Before, every animation was priced as a photo's frames or
#: noise's (0.8-1.5; moved only: 0.6): a 60-frame 480x270 GIF of a drawing rotated by
#: 45 degrees was estimated 12.5 s and refused for 3.3 s of work, and a panned photo
#: blurred was estimated 5.8 s for 10.8 s.
KEPT = (0.08, 0.6)
MADE = (0.2, 1.2)
DENSE = 0.8
_MOVES_PIXELS = {"flip", "flop", "crop"}
_MAPS_COLOURS = {"negative", "monochrome", "blackwhite", "sepia", "modulate"}
_ADDS_AROUND = {"border", "rotate", "polaroid", "shadow"}
#: Seconds a frame of the result costs to save besides its pixels (GIF: a palette made for
#: each frame, 4 ms for a 40x30 one of many colours).
SAVE_FRAME = {"gif": 0.005}


def save_rate(
    fmt: str,
    megapixels: float,
    content: Callable[[str], Content] | None = None,
    frames: int = 1,
    factor: float = 1.0,
    flat: float = 0.0,
    noise_factor: float = 1.0,
) -> float:
    """Seconds a megapixel to save ``megapixels`` as ``fmt``: a photo's rate, or nearer
    noise's as ``content``'s detail says, for an encoder whose time depends on it (asked
    only when the save at a photo's rate would take over ``MEASURE_ABOVE``); nearer
    ``FLAT`` as much as it finds flat, less the share ``flat`` says the chain may
    have changed (a still whose chain keeps the source's flat areas, but in the boxes
    of a partial task: ``flatness.kept``; 0: none kept). ``factor`` (``quality_factor``) multiplies
    the photo's and the flat rate, not noise's: AVIF's noise grew less at quality 100
    (1.73x) than photos' (2.1-2.6x), and its rate is already high; ``noise_factor``
    (``jpeg_factors``' second) multiplies noise's. Nothing is measured where noise's rate
    is no higher than the photo's."""
    rate, noise = SAVE.get(fmt, OTHER) * factor, SAVE_NOISE.get(fmt)
    noise = SAVE_NOISE_FRAMES.get(fmt, noise) if frames > 1 else noise
    noise = None if noise is None or noise * noise_factor <= rate else noise * noise_factor
    lowest = FLAT[fmt] * factor if flat > 0 and frames == 1 and fmt in FLAT else None
    if content is None or rate * megapixels <= MEASURE_ABOVE:
        return rate
    if noise is None and lowest is None:
        return rate
    found = content(DETAIL if lowest is None else FLAT_MEASURE[fmt])
    if noise is not None:
        rate += (noise - rate) * min(1.0, max(0.0, found.detail))
    if lowest is not None:
        rate -= (rate - lowest) * min(1.0, max(0.0, found.flat - (1.0 - flat)))
    return rate


def drawn_rate(fmt: str, factor: float, flat: float) -> float:
    """A plain drawing's (``DRAWN_FLAT``), known without drawing it: ``FLAT``'s rate over
    the share ``flat`` that its chain keeps flat (``flatness.kept``), a photo's over the
    rest; ``factor``: ``quality_factor``'s."""
    rate = SAVE[fmt] * factor
    return rate - (rate - FLAT[fmt] * factor) * flat


def quality_factor(fmt: str, chain: Chain, cmyk: bool = False) -> float:
    """How many times its rate a save at the chain's quality and coding takes: AVIF's
    grows with the quality, a JPEG's with its coding and quality (``jpeg_factors``;
    ``cmyk``: saved in CMYK), a TIFF's with ``compress`` (``DEFLATED_TIFF``)."""
    if fmt == "jpeg":
        return jpeg_factors(chain, cmyk)[0]
    if fmt == "tiff":
        return DEFLATED_TIFF if chain.compresses else 1.0
    quality = chain.quality
    if fmt != "avif" or not isinstance(quality, int) or quality <= AVIF_QUALITY[0][0]:
        return 1.0
    for (q0, f0), (q1, f1) in itertools.pairwise(AVIF_QUALITY):
        if quality <= q1:
            return f0 + (f1 - f0) * (quality - q0) / (q1 - q0)
    return AVIF_QUALITY[-1][1]


def noise_factor(fmt: str, chain: Chain, cmyk: bool = False) -> float:
    """How many times noise's rate (``SAVE_NOISE``) the chain's save takes: a JPEG's by
    its coding (``jpeg_factors``), 1 for the other formats."""
    return jpeg_factors(chain, cmyk)[1] if fmt == "jpeg" else 1.0


def jpeg_factors(chain: Chain, cmyk: bool = False) -> tuple[float, float]:
    """The (photo, noise) factors for the chain's JPEG save: ``JPEG_CODING``'s, (1, 1) for
    a baseline JPEG, or ``JPEG_CMYK_CODING``'s for one saved in CMYK; a quality not yet
    known (``input``, read from the source when the job runs) as libvips' default."""
    coding = "progressive" if chain.output_format == "pjpg" else None
    coding = coding or ("optimized" if chain.compresses else None)
    if coding is None and not cmyk:
        return 1.0, 1.0
    quality = chain.quality if isinstance(chain.quality, int) else DEFAULT_QUALITY
    band = 0 if quality < WHOLE_CHROMA_FROM else 1 if quality < 100 else 2
    table = JPEG_CMYK_CODING if cmyk else JPEG_CODING
    return table[coding or "baseline"][band]


def gif_frames_rate(
    fmt: str,
    loader: str,
    tasks: Sequence[Task],
    size: tuple[int, int],
    density: float | None,
    frames: int,
) -> float | None:
    """Seconds a megapixel to save, as ``fmt``, the result of ``tasks`` (those that make
    pixels) on a GIF's frames of ``size`` whose frames are coded with ``density`` bytes
    a pixel (None: not known, priced as the densest): ``KEPT``'s rate when the chain
    keeps each frame's palette, ``MADE``'s for the frames of an animation (``frames`` >
    1) whose chain makes colours, over the source's share of the result; ``FLAT``'s over
    the area a task adds around it. None for any other chain, source or result."""
    if fmt != "gif" or loader != "gifload":
        return None
    dense = 1.0 if density is None else min(1.0, density / DENSE)
    kept, inside = _shares(tasks, size)
    if not kept and frames == 1:
        return None
    least, most = KEPT if kept else MADE
    return (least + most * dense) * inside + FLAT[fmt] * (1.0 - inside)


def _shares(tasks: Sequence[Task], size: tuple[int, int]) -> tuple[bool, float]:
    """Whether each frame's colours are kept or mapped one to one, and the share of the
    result that is the source's frames: the rest is the area a ``border``, a free turn,
    a ``polaroid`` or a ``shadow`` adds around them (one colour, or a shadow's few)."""
    kept, inside, (width, height) = True, 1.0, size
    for task in tasks:
        kept = kept and (task.name in _MAPS_COLOURS or task.name == "border" or _moves_only(task))
        declared = catalogue.TABLE[task.name].size
        grown = declared(task, width, height) if declared else (width, height)
        if task.name in _ADDS_AROUND:
            inside *= min(1.0, width * height / max(1, grown[0] * grown[1]))
        elif task.name == "crop":
            inside = 1.0  # which part it keeps is not followed: all of it priced as the source's
        width, height = grown
    return kept, inside


def _moves_only(task: Task) -> bool:
    """An exact turn (``geometry.turned``), a flip or a cut (to faces too, when it does not
    scale them): no colour made."""
    if task.name == "crop_faces":
        return task.get("width") is None and task.get("height") is None
    if task.name == "rotate":
        deg = task.get("deg", 0)
        return isinstance(deg, int) and deg % 90 == 0 and task.get("exif") is None
    return task.name in _MOVES_PIXELS
