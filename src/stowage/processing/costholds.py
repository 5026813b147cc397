"""The cost estimate's steps and the holds the engine will take of them (``holding``):
what each step costs once its holds are known (cost.py builds the steps)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from stowage.processing import catalogue, holding
from stowage.processing.base import Task
from stowage.processing.table import Kind

#: A sharpen of an image with alpha (premultiplied, in 4 bands) before a resize that
#: shrinks it to a quarter or less (libvips then shrinks by whole factors first; from
#: 2.7 times, not): the resize asks for short strips, and the sharpen's margins and its
#: colour conversions are computed again for each; it and the steps before it cost
#: ``1 + min(STRIPS_MOST - 1, margin / STRIPS_MARGIN)`` times more. Measured 2026-12-02
#: (one thread, a 12 MP photo JPEG): circle/sharpen=amount:20 3.9 s, then
#: resize=width:240 9.6 s (1000: 10.1; 3000: 4.0; estimated 6.1); amount 12 3.1 s,
#: resized to 2000 or 1500 3.0, to 1000 6.3, to 500 6.9; amount 2 2.4 and 3.6 s;
#: rounded_corners/sharpen=amount:20/resize=width:240 6.8 s (estimated 4.1). Without
#: alpha the sharpen's rate already covers it (amount 20: 1.6 s, 2.6 s resized to 240,
#: estimated 3.5); a blur's tile margins do (circle/blur=amount:20/resize 5.0 s,
#: estimated 5.05). Again 2026-12-03 on a 2.7 MP photo with alpha resized to 181 px,
#: against the sharpen alone (its 4 bands now priced apart, ``cost.PREMULTIPLIED``):
#: 1.14, 1.13, 1.66 times at amount 2, 8, 14 (priced 1.15, 1.6, 2.05).
STRIPS_MARGIN, STRIPS_MOST = 20.0, 2.5
SHRUNK = 4  # a resize that divides the height by this or more asks for strips
#: A sharpen before a resize that shrinks less (reduce's kernel alone: its input lines
#: overlap from one output line to the next), alpha or not: its margins are computed
#: again, ``1 + min(REDUCED_MOST - 1, margin / REDUCED_MARGIN)`` times. Measured
#: 2026-12-03 (one thread, a 2.7 MP photo, 1811 px resized to 1500, CPU normalised):
#: amount 2, 8, 14 took 1.36, 1.9, 2.3 times the sharpen alone in RGB, 1.44, 2.1, 2.4
#: with alpha, saved as JPEG; unpriced before, the last was estimated at 0.60 s for 2.0.
#: The saver's strips change it: amount 7 on 3 MP resized by 1.14, 1.6-2.3 times in RGB
#: (PNG least), 1.7 with alpha to JPEG, 2.2-2.3 to WebP and TIFF, 2.8 to PNG.
REDUCED_MARGIN, REDUCED_MOST = 7.0, 3.0
#: with alpha, the worst of them (PNG) priced
ALPHA_REDUCED_MARGIN, ALPHA_REDUCED_MOST = 5.0, 3.5


@dataclass(frozen=True)
class Step:
    """A task's seconds on one frame, and how it makes the steps before it computed."""

    task: Task
    seconds: float
    amplification: float  # times it computes what comes before it (a blur's margins)
    turn: float  # the same, a turn left lazy (``holding.strip_reads``); else 1
    site: holding.Site
    strips: float = 1.0  # the same with it, under a shrinking resize (``STRIPS_MARGIN``)
    reduced: float = 1.0  # the same, under a resize that shrinks less (``REDUCED_MARGIN``)
    inner: float = 0.0  # seconds of its own work before its turn, read again with its input
    tiles: float = 1.0  # the same, a turn held (``holding.tile_reads``); else 1


def reading(steps: Sequence[Step], seconds: float) -> tuple[list[Step], float]:
    """``steps`` with ``seconds`` of reading the source (``samples``: a lazy conversion
    of its samples) in the first one, computed again whenever it is; the seconds left
    when there is no step."""
    if not steps:
        return [], seconds
    first = dataclasses.replace(steps[0], seconds=steps[0].seconds + seconds)
    return [first, *steps[1:]], 0.0


def strips(margin: float) -> float:
    """``Step.strips`` of a sharpen of ``margin`` pixels on an image with alpha."""
    return _again(margin, STRIPS_MARGIN, STRIPS_MOST)


def reduced(margin: float, alpha: bool) -> float:
    """``Step.reduced`` of a sharpen of ``margin`` pixels, on an image with alpha or not."""
    if alpha:
        return _again(margin, ALPHA_REDUCED_MARGIN, ALPHA_REDUCED_MOST)
    return _again(margin, REDUCED_MARGIN, REDUCED_MOST)


def _again(margin: float, per: float, most: float) -> float:
    """How many times a sharpen's work is done: once, and once more for each ``per``
    pixels of its margin, ``most`` times at most."""
    return 1.0 + min(most - 1.0, margin / per)


def sites(steps: Sequence[Step], *, still: bool) -> list[holding.Site]:
    """The holds the engine asks for, step by step: besides each task's own, a still's
    first task that shrinks on load is held when a later one reads out of order
    (``vips._pipeline``)."""
    sites = [step.site for step in steps]
    kinds = [catalogue.TABLE[step.task.name] for step in steps]
    plain = still and all(spec.kind is Kind.IMAGE for spec in kinds)  # no collage, animate
    shrinks = bool(kinds) and kinds[0].load_op is not None
    if plain and shrinks and any(spec.random_access for spec in kinds[1:]):
        sites[0] = dataclasses.replace(sites[0], result=True)
    return sites


def computed(steps: Sequence[Step], pattern: holding.Pattern) -> float:
    """Seconds of one frame's steps with these holds. A step held in memory is computed
    once, whatever reads it after, and so is what comes before it; so is the input of a
    task that measures it, held. Not held, that input is computed once more for the
    measure (n such tasks: n squared); a lazy turn computes what comes before it once a
    strip of it; a lazy turn before it counts only what it reads more (the larger of the
    two factors, not their product): a later turn by a large angle asks the earlier one
    for large regions, each read once, but one by a few degrees asks it for strips, which
    it reads as its own strips. Priced by the later turn alone,
    ``polaroid=rotate:30/rotate=deg:34/polaroid=rotate:359/resize=width:10`` on 484 px
    noise, nothing held, was estimated 0.23 s for 0.72 s of CPU, a third of the same
    chain without its last turn (found by a seed sweep, seed 15723); now 0.75 s. A lazy
    turn's own work before it (``Step.inner``: a polaroid's frame) is read again with its
    input. Through
    a pixelate not held, whose blocks ask their input in parts, a lazy turn before it
    computes its own input for each part: enhance, a lazy turn, pixelate, a lazy turn,
    a resize, on 365 px noise, took 1.9 s of CPU, estimated 0.70 s with the earlier
    turn not counted again; now 4.4. Counted at most once a strip of the later turn
    (2.6 s there), such chains of sepia or shadow took up to 2.6 times their estimate
    (7.7 s for 2.9 on 582 px); counted in full, 0.8 to 6.7 times their CPU time.
    (Through enhance, shadow or partial_pixelate the estimate was already at or above
    the CPU time.)"""
    total, amplified, turned, shrunk = 0.0, 1.0, 1.0, 0
    for step, (held_input, held_result) in zip(reversed(steps), reversed(pattern), strict=True):
        if held_result:
            amplified, turned, shrunk = 1.0, 1.0, 0
        amplified *= (1.0, step.reduced, step.strips)[shrunk]
        total += step.seconds * amplified
        shrunk = max(shrunk, _shrinks(step))
        if held_input:
            amplified, turned, shrunk = 1.0, 1.0, 0
        elif step.turn > 1.0 and not held_result:
            more = max(step.turn / turned, 1.0)
            total += step.inner * amplified * (more - 1.0)
            amplified, turned = amplified * more, max(turned, step.turn)
        else:  # a measure not held computes its input once more, besides its reads
            if held_result:  # a turn held asks by tiles, its own work (inner) in them
                total += step.inner * (step.tiles - 1.0)
                amplified *= step.tiles
            amplified = amplified * step.amplification + (1.0 if step.site.input else 0.0)
            turned = 1.0 if step.task.name == "pixelate" else turned  # it asks in parts
    return total


def _shrinks(step: Step) -> int:
    """2: a resize that asks for strips (``SHRUNK``), 1: one that shrinks less, else 0."""
    if step.task.name != "resize" or step.site.made[1] >= step.site.before[1]:
        return 0
    return 2 if step.site.made[1] * SHRUNK <= step.site.before[1] else 1
