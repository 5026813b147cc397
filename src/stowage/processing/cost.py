"""What a chain will cost, estimated from the header and the tasks before any pixel is
decoded, in seconds of one core.

Without it a chain's cost was bounded only by the job's deadline: a 45-degree rotation
of a 7000x7000 PNG, then a blur of radius 20, held a job slot for 30 s. The estimate
follows the image's size through the chain (a resize, a crop, a rotation, a border
change it) and adds, for each step, the megapixels it makes times that step's rate
(seconds a megapixel, measured with libvips 8.18 on one core of the 2-core machine the
tests run on; the estimate is meant to be within a factor of two, not exact).

libvips computes the result in tiles and asks each step for the area its tile needs: a
blur needs a margin of about three times its radius around the tile, so every step
before a blur is computed again for the overlapping margins. A step's cost is therefore
multiplied by ``(1 + 2 * margin / TILE) ** 2`` for each later step with a margin: an
upscale followed by a large blur costs several times the sum of the two alone. A
rotation by other than a right angle was worse (every strip of it read the bounding box
of its input again); it is computed once into memory (``ops.held``) instead.

A job whose estimate is above ``Limits.max_cost`` is refused (422 PROCESSING_TOO_COSTLY);
one above ``Limits.big_cost`` is a big job, which the pool runs in fewer slots than it
has, so that small jobs never wait behind big ones (``pool.py``).
"""

from __future__ import annotations

from typing import Protocol

from stowage import errors
from stowage.processing import catalogue
from stowage.processing.base import BigJob, Chain, Limits, Task
from stowage.processing.table import Kind

TILE = 128  # libvips' tile side for most operations
DECODE = 0.015  # seconds a megapixel decoded
#: Seconds a megapixel made, per task; tasks not named here cost ``OTHER``.
RATES = {
    "resize": 0.026,  # and SHRINK for what it reads
    "crop": 0.002,
    "rotate": 0.024,
    "flip": 0.013,
    "flop": 0.013,
    "blur": 0.02,
    "sharpen": 0.052,
    "monochrome": 0.012,
    "blackwhite": 0.015,
    "negative": 0.01,
    "sepia": 0.03,
    "modulate": 0.045,
    "pixelate": 0.015,
    "border": 0.01,
    "polaroid": 0.012,  # a frame and a rotation
    "shadow": 0.015,  # of its grown canvas
    "oil_paint": 0.12,  # a median window, or a smaller copy painted and scaled back
    "smart_crop": 0.025,  # of its cover (``works_on``): scaled, held, searched
}
OTHER = 0.05
DENOISE = 0.2  # enhance=preset:fix_noise: a median filter (2.9 s for 12 MP)
SHRINK = 0.01  # seconds a megapixel a resize reads
#: Seconds a megapixel of the result costs to save (GIF: a palette for every frame).
SAVE = {"jpeg": 0.01, "png": 0.03, "webp": 0.16, "gif": 0.5, "avif": 0.5, "tiff": 0.01}
#: Seconds a frame of the result costs to save besides its pixels (GIF: a palette made for
#: each frame, 4 ms for a 40x30 one of many colours).
SAVE_FRAME = {"gif": 0.005}


class Header(Protocol):
    """What the estimate reads of an opened source (``frames.Opened``)."""

    @property
    def frames(self) -> int: ...
    @property
    def decoded_frames(self) -> int: ...
    @property
    def frame_height(self) -> int: ...
    @property
    def frame_pixels(self) -> int: ...


def estimate(opened: Header, chain: Chain, width: int, fmt: str = "png") -> float:
    """Seconds of one core the chain is expected to take on this source, saved as
    ``fmt`` (libvips' saver name: jpeg, png, webp, gif, ...)."""
    steps: list[tuple[float, float, bool]] = []  # seconds, amplification of earlier, held
    w, h = width, opened.frame_height
    for task in chain.tasks:
        if catalogue.TABLE[task.name].kind not in (Kind.IMAGE, Kind.FILES):
            continue  # save options, answers, request tasks: no pixels of their own
        before, works_on = w * h, catalogue.TABLE[task.name].works_on
        worked = works_on(task, w, h) if works_on is not None else (0, 0)
        w, h = size_after(task, w, h)
        made = _rate(task) * max(w * h, worked[0] * worked[1])
        if task.name == "resize":
            made += SHRINK * before
        steps.append((made * opened.frames / 1e6, _amplification(task), _held(task)))
    total, amplified = 0.0, 1.0
    for seconds, amplification, held in reversed(steps):
        # A step held in memory is computed once, whatever reads it after, and so is
        # what comes before it.
        amplified = 1.0 if held else amplified
        total += seconds * amplified
        amplified *= amplification
    # The decoded source is read once: sequentially, or kept whole for random access.
    total += DECODE * opened.frame_pixels * opened.decoded_frames / 1e6
    saved = SAVE.get(fmt, OTHER) * w * h / 1e6 + SAVE_FRAME.get(fmt, 0.0)
    return total + saved * opened.frames


def check(seconds: float, limits: Limits) -> None:
    if seconds > limits.max_cost:
        raise errors.ProcessingTooCostly(
            f"the transformation would take about {seconds:.0f} s of work; "
            f"at most {limits.max_cost:g} s is allowed",
            estimated_seconds=round(seconds, 1),
            max_seconds=limits.max_cost,
        )
    if seconds > limits.big_cost:
        raise BigJob(seconds)


def size_after(task: Task, width: int, height: int) -> tuple[int, int]:
    """The size a task makes of a ``width`` x ``height`` image, as its table entry
    declares it (as the engine does, or a little more: the estimate may be high, not
    low); the image's own size for a task that keeps it."""
    declared = catalogue.TABLE[task.name].size
    return declared(task, width, height) if declared is not None else (width, height)


def _rate(task: Task) -> float:
    if task.name == "enhance" and task.get("preset") == "fix_noise":
        return DENOISE
    return RATES.get(task.name, OTHER)


def _held(task: Task) -> bool:
    holds = catalogue.TABLE[task.name].holds
    return holds is not None and holds(task)


def _amplification(task: Task) -> float:
    """How many times the steps before ``task`` are computed for it: a blur reads a
    margin of three times its radius around each tile. (A rotation by other than a right
    angle read, for each strip of its result, the whole bounding box of it; it is now
    computed once into memory, ``ops.held``, and costs its pixels like any step.)"""
    if task.name in ("blur", "sharpen"):
        amount = task.get("amount", 2)
        radius = float(amount) if isinstance(amount, int | float) else 2.0
        margin = 3 * (radius if task.name == "blur" else radius / 2)
        return (1 + 2 * margin / TILE) ** 2
    return 1.0
