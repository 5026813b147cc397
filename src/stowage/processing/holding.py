"""What a job keeps in memory (``ops.held``), decided by one rule that the engine and
the cost estimate both use: the engine asks ``HoldBudget.take`` as it builds each
frame's pipeline, and ``cost.estimate`` asks a budget of its own the same questions,
in the same order (``plan``), so that it prices what the engine will do.

Without that, the estimate priced every rotation as held while the engine, its budget
spent, left the later ones lazy: a 2000x2000 JPEG turned three times then resized to
10 px, with ``max_total_pixels`` at 12 million, took 8-10 s estimated at under one.

A lazy turn by other than a right angle reads, for every strip a later resize asks of
it, the bounding box of that strip in its input: what comes before it, back to the
last image in memory, is computed once a strip (``strip_reads``). A 1000x1000 image
through sepia, then a lazy 45-degree turn, then resized to 10 px: 1.3 s, against
0.05 s held; 2000x2000: 10 s against 0.15 (it grows as the side cubed). Held, the turn
still asks its input by tiles whose parts of it overlap: what comes before it is computed
up to twice (``tile_reads``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

#: Rows of a lazy turn's result priced as one read by a shrinking resize after it:
#: fitted so that sepia, then a lazy turn, then a resize to 10 px, on 1000 px noise, is
#: priced at least at its CPU time (45 degrees: 1.28 s measured, 1.21 priced); chains of
#: lazy turns are then priced 2-4 times their CPU time (docs/decisions.md).
STRIP = 12
#: libvips' tile side for most operations, a turn held in memory among them. One
#: thread, a point operation (Lab and back) on 1400 px noise before a held turn by 1, 5,
#: 10, 20, 30, 45, 60, 70, 80, 85 and 89 degrees: computed 1.01, 1.15, 1.26, 1.59, 1.73,
#: 1.78, 1.90, 1.61, 1.40, 1.18 and 1.02 times (``tile_reads``: 1.06, 1.21, 1.37, 1.69,
#: 1.90, 2.04, 1.90, 1.69, 1.37, 1.21, 1.06).
TILE = 128


class HoldBudget:
    """Pixels a job may still hold in memory, and the largest side one may have."""

    def __init__(self, pixels: int, side: int | None = None) -> None:
        self.pixels, self.side = pixels, side

    def take(self, width: int, height: int) -> bool:
        """Whether a ``width`` x ``height`` image is held: within the output side limit
        (beyond it, left lazy: the engine refuses it before computing anything) and
        within what the job's holds before it left of its total pixels."""
        pixels = width * height
        if pixels > self.pixels or (self.side is not None and max(width, height) > self.side):
            return False
        self.pixels -= pixels
        return True


@dataclass(frozen=True)
class Site:
    """A step's holds, as the engine asks for them: its input first (a task that measures
    it), then its result (a turn)."""

    before: tuple[int, int]
    made: tuple[int, int]
    input: bool  # the engine holds the step's input (``TaskSpec.measures``)
    result: bool  # the step's operation holds its result (``TaskSpec.holds``)


#: For each step: (its input held, its result held).
Pattern = tuple[tuple[bool, bool], ...]


def plan(sites: Sequence[Site], frames: int, budget: HoldBudget) -> Counter[Pattern]:
    """How many frames get each pattern of holds: each frame's pipeline is built in turn
    (``frames.each_frame``), its holds taken from the one budget in the order of its
    steps. Once a frame takes nothing, every later one is the same."""
    found: Counter[Pattern] = Counter()
    for done in range(frames):
        left = budget.pixels
        pattern = tuple(_taken(site, budget) for site in sites)
        if budget.pixels == left:  # nothing more will fit
            found[pattern] += frames - done
            break
        found[pattern] += 1
    return found


def _taken(site: Site, budget: HoldBudget) -> tuple[bool, bool]:
    held_input = site.input and budget.take(*site.before)
    return held_input, site.result and budget.take(*site.made)


def tile_reads(deg: int) -> float:
    """How many times a turn by ``deg`` held in memory computes its lazy input: libvips
    makes the turn in ``TILE`` x ``TILE`` tiles and asks its input, for each, the bounding
    box of that tile's part of the picture and the bilinear's pixel around it."""
    rad = math.radians(deg)
    side = TILE * (abs(math.cos(rad)) + abs(math.sin(rad))) + 2
    return (side / TILE) ** 2


def strip_reads(before: tuple[int, int], made: tuple[int, int], deg: int) -> float:
    """How many times a lazy turn by ``deg`` of a ``before`` image into ``made`` computes
    its input, read in strips of ``STRIP`` rows: the bounding box in the input of each
    strip's part of the picture, as a share of the input, summed (from at most
    ``SAMPLES`` strips, evenly spread)."""
    rad = math.radians(deg)
    width, height = max(1, before[0]), max(1, before[1])
    strips = max(1, math.ceil(made[1] / STRIP))
    reach = (abs(math.sin(rad)) * width + abs(math.cos(rad)) * height) / 2
    picked = range(0, strips, max(1, strips // SAMPLES))
    shares = [_boxed(width, height, rad, -reach + i * STRIP, STRIP) for i in picked]
    return max(1.0, strips * sum(shares) / len(shares))


SAMPLES = 64


def _boxed(width: int, height: int, rad: float, top: float, rows: float) -> float:
    """The share of a ``width`` x ``height`` input that the bounding box of the part of
    it between rows ``top`` and ``top + rows`` of its turn (rows measured from the
    turn's centre) covers."""
    corners = [(0.0, 0.0), (width, 0.0), (width, height), (0.0, height)]

    def row(x: float, y: float) -> float:
        return -math.sin(rad) * (x - width / 2) + math.cos(rad) * (y - height / 2)

    points = [(x, y) for x, y in corners if top <= row(x, y) <= top + rows]
    for (ax, ay), (bx, by) in zip(corners, corners[1:] + corners[:1], strict=True):
        ra, rb = row(ax, ay), row(bx, by)
        for line in (top, top + rows):
            if (ra - line) * (rb - line) < 0:
                t = (line - ra) / (rb - ra)
                points.append((ax + t * (bx - ax), ay + t * (by - ay)))
    if not points:
        return 0.0
    xs, ys = [x for x, _ in points], [y for _, y in points]
    return (max(xs) - min(xs)) * (max(ys) - min(ys)) / (width * height)
