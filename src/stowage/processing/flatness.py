"""How much of a source is flat (areas of one colour: a screenshot, a diagram, a logo on
white), for the encoders that save it several times faster than a photo
(``saverates.FLAT``), besides its detail (detail.py's scale), in one decode.

Two measures, as the encoders differ (one thread, 2000x1500, 2026-12-02):

- ``COLOURS`` (GIF): libimagequant is fast while the colours fit its palette and slow
  once it must choose and dither: blocks, text and screenshots of few colours 0.07-0.09 s
  a megapixel, eight colours scattered as noise 0.09, the same blocks with +-2 of noise
  (750 colours) 0.61, a 2D gradient 0.31, a photo 0.85. The share of pixels whose colour
  is among the 256 commonest (exact colours, hashed into 16 bits): a screenshot 1.0, the
  gradient 0.81, the noisy blocks 0.72, a photo 0.01; the time grows about linearly
  with the share left out (blocks with 2 % of photo 0.07-0.13, 10 % 0.15-0.2, 20 %
  0.25-0.29), so the share priced flat is one less twice that share.
- ``BLOCKS`` (AVIF, WebP, PNG): what costs them is edges, wherever they are, not colours:
  text on white to AVIF 0.45 s a megapixel (a photo 0.49), though 71 % of its pixels
  equal their neighbours; flat blocks 0.084. The share of 8x8 blocks in which no pixel
  differs from its right or lower neighbour in any band: text 0.18, a screenshot 0.22,
  blocks 0.95, a gradient 0.6, a photo or noise 0.

Both read the source at full size as a stream: 0.03-0.04 s a megapixel with the decode
of a PNG (``MEASURE``), charged to the estimate when asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyvips

from stowage.processing import catalogue, detail, frames
from stowage.processing.base import Task
from stowage.processing.effects_restore import PRESETS

DETAIL, COLOURS, BLOCKS = "detail", "colours", "blocks"
#: Seconds a megapixel of the source the flat measures cost besides its decode.
MEASURE = 0.03
BLOCK = 8  # pixels a side of the blocks BLOCKS counts
PALETTE = 256  # colours a GIF's palette holds
#: Rows the colours measure's line cache asks of the image at a time. At libvips' default
#: of one, a lazy turn before it computed its input's bounding box again for every row:
#: an upscale, a polaroid and a lazy 22-degree turn of 300 px noise, its turn left lazy
#: by a small pixel budget, took 1.9 s to measure against 0.25 s to make and save as GIF
#: (the whole result read so: 7.8 s, against 0.27 at 64 rows).
ROWS_READ = 64
#: The colours measure prices flat one less this many times the share of pixels outside
#: the commonest colours: past 256 colours every pixel is matched and dithered.
OUTSIDE_WEIGHT = 2.0
#: libimagequant maps each pixel to its palette: within 256 colours, the more colours share
#: the pixels, the slower (one thread, 2000x2000, effort 4, 2026-12-03: a photo in 8 grey
#: levels 0.08-0.1 s a megapixel, 32 0.12, 64 0.16, 128 0.28-0.33, 256 0.44-0.47; a
#: monochrome photo, 241 levels of which about 99 share it evenly, 0.47-0.53, sepia's
#: 0.56). The share is kept whole up to ``FEW_COLOURS`` colours of even share,
#: ``MANY_KEPT`` of it from ``MANY_COLOURS``. A monochrome photo to GIF, measured on its
#: result as all flat, was estimated 1.3 s for 7.3.
FEW_COLOURS, MANY_COLOURS, MANY_KEPT = 8.0, 64.0, 0.3
#: Image tasks after which a flat source's areas are as flat, in the same share, of the
#: same colours or of colours mapped each to one (the measure reads the source, not the
#: result): turned, framed, recoloured. A resize or a blur makes new colours along every
#: edge, a turn by other than a right angle along its own; a crop may keep only the part
#: that is not flat.
KEEPING = frozenset({"flip", "flop", "border", "negative", "monochrome"})
KEEPING |= {"blackwhite", "sepia", "modulate"}
#: For ``BLOCKS``, besides: an upscale (twice each side, lanczos3, then a 3x3 sharpen)
#: keeps the inside of each flat area flat and spreads its edges over about as many of
#: the larger image's blocks (its new colours along them are ``COLOURS``' concern).
KEEPING_BLOCKS = KEEPING | {"upscale"}
#: Tasks that change their boxes (``objects``) only.
PARTIAL = frozenset({"partial_pixelate", "partial_blur"})
_RIGHT = [[-1, 1]]
_BELOW = [[-1], [1]]


@dataclass(frozen=True)
class Content:
    """What a save's time depends on: ``detail`` 0 (a photo's) to 1 (noise's), ``flat``
    the share of the result an encoder saves at its flat rate (0: none measured)."""

    detail: float
    flat: float = 0.0


def least(kind: str) -> Content:
    """The least any source may cost: a photo's detail, all flat (before measuring)."""
    return Content(0.0, 1.0)


def kept(tasks: Sequence[Task], kind: str, size: tuple[int, int]) -> float:
    """How much of a flat source's share the result of ``tasks`` (the image tasks, from
    an image of ``size``) keeps, as the measure ``kind`` finds it: 1 all, 0 none (a task
    that is not ``KEEPING``); less twice the share of a partial task's boxes (with their
    softened edges and a block around them), which may be anything after it."""
    keeping = KEEPING_BLOCKS if kind == BLOCKS else KEEPING
    share, (width, height) = 1.0, size
    for task in tasks:
        if task.name in PARTIAL:
            share -= 2 * _boxed(task, width, height)
        elif not (task.name in keeping or _right_angle(task) or _curves(task)):
            return 0.0
        declared = catalogue.TABLE[task.name].size
        width, height = declared(task, width, height) if declared else (width, height)
    return max(0.0, share)


def _boxed(task: Task, width: int, height: int) -> float:
    """The share of a ``width`` x ``height`` image a partial task's boxes may change."""
    blur = task.get("blur", 4)
    grown = 3 * (float(blur) if isinstance(blur, int | float) else 20.0) + BLOCK
    boxes = task.get("objects", ())
    area = 0.0
    for box in boxes if isinstance(boxes, tuple) else ():
        values = box if isinstance(box, tuple) else ()
        sides = [float(v) for v in values if isinstance(v, int | float)]
        if len(sides) != 4:
            return 1.0  # a box not read: anything may change
        area += min(width, sides[2] + 2 * grown) * min(height, sides[3] + 2 * grown)
    return min(1.0, area / max(1, width * height))


def _curves(task: Task) -> bool:
    """``enhance`` by curves, gamma and saturation (each pixel by itself; a median for
    ``fix_noise``, which keeps flat areas flat), without a preset's soft blur."""
    preset = PRESETS.get(str(task.get("preset", "auto")))
    return task.name == "enhance" and preset is not None and preset.smooth == 0


def _right_angle(task: Task) -> bool:
    degrees = task.get("deg", 0)
    quarter = degrees == "exif" or (isinstance(degrees, int) and degrees % 90 == 0)
    return task.name == "rotate" and quarter


def content(opened: frames.Opened, kind: str) -> Content:
    """``kind``'s measure of the source ``opened`` (``DETAIL``: detail alone)."""
    if kind == DETAIL or opened.image.width < 2 or opened.image.height < 2:
        return Content(detail.measured(opened))
    try:
        image = frames.load(opened.name, {"access": "sequential", "fail_on": "error"})
        found = of_strips([image], kind)
        return Content(detail.measured(opened)) if found is None else found
    except pyvips.Error:
        return Content(0.0)  # a source that does not decode: the job's own decode says why


def of_strips(strips: Sequence[pyvips.Image], kind: str) -> Content | None:
    """``kind``'s measure (``COLOURS`` or ``BLOCKS``) of the rows of an image cut into
    ``strips`` of the same width, in order, each a multiple of ``BLOCK`` rows high but
    the last (read as one stream); None for samples that are not 8 or 16-bit unsigned.
    The strips are joined as they are and measured as one image: each strip measured,
    then the measures joined, held every strip's buffers at once (214 MiB for the 11
    strips of a 40 MP picture, ``tests/processing/test_measure_memory.py``)."""
    if any(strip.format not in ("uchar", "ushort") for strip in strips):
        return None  # floats, signed: detail alone
    joined = strips[0] if len(strips) == 1 else pyvips.Image.arrayjoin(strips, across=1)
    if kind == COLOURS:  # in rows' order: its two branches' tiles read a wide one out of it
        return _colours(joined.sequential(tile_height=ROWS_READ))
    return _blocks(joined, [strip.height for strip in strips])


def _colours(image: pyvips.Image) -> Content:
    eight = (image >> 8) if image.format in ("ushort", "short") else image
    wide = eight.cast("uint")
    key = ((wide[0] << 8) | wide[1]) ^ (wide[2] << 4) if image.bands >= 3 else wide[0]
    if image.bands in (2, 4):  # alpha is quantised with the colours
        key = key ^ (wide[image.bands - 1] << 6)
    key = (key & 0xFFFF).cast("ushort")
    difference = _green(image).cast("ushort")
    counts = np.asarray(key.bandjoin(difference).hist_find().numpy(), np.float64)
    counts = counts.reshape(-1, 2)
    pixels = max(1.0, float(counts[:, 0].sum()))
    common = float(np.sort(counts[:, 0])[-PALETTE:].sum()) / pixels
    mean = float((counts[:, 1] * np.arange(len(counts))).sum()) / pixels
    flat = max(0.0, 1.0 - OUTSIDE_WEIGHT * (1.0 - common)) * _palette_kept(counts[:, 0] / pixels)
    return Content(detail.scored(mean, image.format), flat)


def _palette_kept(shares: np.ndarray) -> float:
    """The part of the colours measure's flat share left when many colours share the
    pixels evenly (``FEW_COLOURS``): by their effective number, one over the sum of
    their shares squared (text on white: about 1; a grey photo: about 100)."""
    effective = 1.0 / max(float((shares * shares).sum()), 1e-12)
    spread = min(1.0, max(0.0, (effective - FEW_COLOURS) / (MANY_COLOURS - FEW_COLOURS)))
    return 1.0 - (1.0 - MANY_KEPT) * spread


def _blocks(image: pyvips.Image, heights: Sequence[int]) -> Content:
    # one stream: the two measures joined before the shrink (two branches of one
    # sequential decode would read it out of order)
    joined = _green(image).bandjoin(_changed(image, heights)).cast("float")
    if joined.width < BLOCK or joined.height < BLOCK:
        return Content(detail.scored(float(joined[0].avg()), image.format))
    small = joined.shrink(BLOCK, BLOCK).copy_memory()
    flat = float((small[1] == 0).avg()) / 255
    return Content(detail.scored(float(small[0].avg()), image.format), flat)


def _changed(image: pyvips.Image, heights: Sequence[int] = ()) -> pyvips.Image:
    """255 where a pixel differs from its left or upper neighbour in any band, else 0;
    the first row of each strip of ``heights`` has no upper neighbour (the row above it
    in ``image`` is the last of the strip before, another part of the picture)."""
    wide = image.cast("int") if image.format in ("ushort", "short") else image.cast("short")
    right = wide.conv(pyvips.Image.new_from_list(_RIGHT), precision="integer").abs()
    below = wide.conv(pyvips.Image.new_from_list(_BELOW), precision="integer").abs()
    if len(heights) > 1:
        below = below * _not_first_rows(heights, image.width)
    changed = right | below
    return (changed.bandor() if changed.bands > 1 else changed) > 0


def _not_first_rows(heights: Sequence[int], width: int) -> pyvips.Image:
    """0 on the first row of each strip of ``heights``, 1 on the others, ``width`` wide."""
    rows = np.ones((sum(heights), 1), np.uint8)
    rows[np.cumsum(heights)[:-1]] = 0
    return pyvips.Image.new_from_array(rows).embed(0, 0, width, len(rows), extend="copy")


def _green(image: pyvips.Image) -> pyvips.Image:
    """Each value of the green band (or the grey) minus its left neighbour, absolute."""
    band = image.extract_band(1 if image.bands >= 3 else 0)
    wide = band.cast("int") if image.format in ("ushort", "short") else band.cast("short")
    return wide.conv(pyvips.Image.new_from_list(_RIGHT), precision="integer").abs()
