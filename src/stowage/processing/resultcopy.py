"""The copy of the source a chain that reads out of order is measured on
(``resultshare``): bounded in pixels whatever the source's size.

A chain whose tasks read their image out of order (a flip, a turn held in memory,
``smart_crop``'s cover, a shadow's offset outline) cannot be computed on the strips of
one sequential decode. The measure ran them on a second decode for random access,
whole: 90 MiB resident for a 30 MP PNG (past libvips' 100 MB threshold, a temporary
file of the whole image instead). It now runs them on a copy of at most ``SMALL``
pixels: the source itself when that small, else every ``k``-th pixel of every ``k``-th
row of a sequential decode (nearest neighbour: no colour the source lacks, so the
colours measure still counts the source's own), held in memory. Sizes in the tasks'
options (a blur's radius, a border's width) cover ``k`` times more of such a copy: its
flat share is then a little lower, the save priced a little higher.
"""

from __future__ import annotations

import math

import pyvips

from stowage.processing import frames
from stowage.processing.holding import HoldBudget

#: The most pixels the copy holds (18 MB in 8-bit sRGB), and the least pixels the tasks
#: may hold on it (``ops.held``: a turn's bounding box, smart_crop's cover), in copies.
SMALL = 6_000_000
HOLDS = 4


def factor(pixels: int) -> int:
    """The step ``k`` between the pixels kept of a source of ``pixels``."""
    return max(1, math.ceil(math.sqrt(pixels / SMALL)))


def share(pixels: int) -> float:
    """The share of the source's pixels the copy keeps: of the tasks' work, the share
    the measure computes (each task wholly, on the copy)."""
    return 1.0 / factor(pixels) ** 2


def copied(name: str, pixels: int) -> pyvips.Image:
    """The copy of the source ``name`` (``frames.Opened.name``) of ``pixels``, in memory,
    read in one sequential pass."""
    step = factor(pixels)
    image = frames.load(name, {"access": "sequential", "fail_on": "error"})
    return (image.subsample(step, step) if step > 1 else image).copy_memory()


def budget(image: pyvips.Image, pixels: int, job: HoldBudget | None) -> HoldBudget:
    """What the tasks run on the copy ``image`` of a source of ``pixels`` may hold
    (``ops.HOLD_BUDGET``): the job's own budget (``job``, before any of it is taken)
    scaled to the copy, so that the copy holds what the job will, and ``HOLDS`` copies
    at least. With the copies alone, a 1200 px noise JPEG upscaled, then turned by 45
    degrees, held its turn in the job but not on the copy: the copy's turn, lazy, made
    the upscale again for every strip the measure read, 6.8 s of a 7.1 s job estimated
    at 2.2 (and with a sharpen between them, 32 s for 3.5)."""
    own = HOLDS * image.width * image.height
    if job is None:
        return HoldBudget(own)
    step = factor(pixels)
    side = None if job.side is None else -(-job.side // step)
    return HoldBudget(max(own, job.pixels // (step * step)), side)
