"""The flat share of what the encoder sees (``flatness``), measured on the chain's result
where that is cheap, rather than on the source.

The flat measure read the source, and only the tasks that keep a flat source's areas
(``flatness.KEEPING``) kept its share: after any other effect the save was priced as a
photo's. ``vignette=amount:70`` on a 9.3 MP screenshot to GIF was estimated 8.5 s and
refused for 1.8 s of CPU (``polaroid`` 11.1 s for 1.0, ``circle`` 8.7 for 1.0, ``blur``
7.9 for 1.5): their result is as flat as the source but for a ring, a frame or the
edges, and a point operation such as ``blackwhite`` makes a photo flatter still.

For a still whose image tasks read in order (``run_on_strips``), the same tasks run on
a fresh sequential decode of the source and the measure reads ``SHARE`` of the result's
rows, in strips of ``STRIP`` spread over its height (the tasks compute only what those
strips need). Tasks that read out of order (a flip, a turn held in memory, smart_crop's
cover, a shadow) run on a copy of the source bounded in pixels (``resultcopy``), not on
a second decode for random access, whole: memory stays flat whatever the source's size.
A turn by 45 degrees of a 9.4 MP screenshot to GIF, priced from the source's share
before (a turn keeps none), was estimated 16.1 s and refused for 2.7 s of CPU; now 3.5
for 2.0. The face tasks that change only the faces' boxes are left out of the run.
The estimate charges that work (``Counted``) and prices the save from the result's
share. Other chains (``crop_faces``, ``align:faces``, a frame of an animation, whose
flat rate ``saverates`` does not give) keep the source's measure and ``flatness.kept``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import pyvips

from stowage import errors
from stowage.processing import catalogue, flatness, frames, ops, resultcopy
from stowage.processing.base import Task
from stowage.processing.table import Kind

#: The share of the result's rows measured, and the rows of a strip (a multiple of
#: ``flatness.BLOCK``): 1/8 measured the flat share within 0.03 of the whole on
#: screenshots, text and blocks through vignette, blur, circle and polaroid.
SHARE = 1 / 8
STRIP = 64
#: Tasks that change only the faces' boxes (or nothing: ``detect_faces``' answer): the
#: measure leaves them out, as their search costs more than the share it would find (a
#: face blurred or pixelated is no less flat than it was).
FACE_BOXES = frozenset({"detect_faces", "pixelate_faces", "blur_faces", "redeye"})
#: Tasks whose result is where the faces are: measured on the source.
TO_FACES = frozenset({"crop_faces"})
#: Tasks that read their whole input before they change it (enhance's percentiles): the
#: measure computes the tasks before them whole. (``pixelate`` and ``shadow`` hold their
#: input in the job to read it twice; the measure reads twice only its strips.)
WHOLE = frozenset({"enhance"})

Measure = Callable[[str], flatness.Content]
Run = Callable[[pyvips.Image, list[Task]], pyvips.Image]


def reads_result(tasks: Sequence[Task], still: bool) -> bool:
    """Whether the flat share of ``tasks``' result (the image tasks of a still, in the
    order they run) is measured on it: each is an image task whose result is not where
    the faces are."""
    return still and bool(tasks) and all(_measured(task) for task in tasks)


def _measured(task: Task) -> bool:
    spec = catalogue.TABLE[task.name]
    plain = spec.kind is Kind.IMAGE and task.name not in TO_FACES
    return plain and task.get("align") != "faces"


def run_on_strips(tasks: Sequence[Task]) -> bool:
    """Whether ``tasks`` (``measured_tasks``) compute the result's strips from one
    sequential decode: each reads in order (no random access, no turn held, no larger
    image on the way). The others run on a bounded copy (``resultcopy``)."""
    return all(_in_order(task) for task in tasks)


def _in_order(task: Task) -> bool:
    spec = catalogue.TABLE[task.name]
    held = spec.holds is not None and spec.holds(task)
    return not (spec.random_access or held or spec.works_on is not None)


def measured_tasks(tasks: Sequence[Task]) -> list[Task]:
    """The tasks the measure runs: all but those that change only the faces' boxes."""
    return [task for task in tasks if task.name not in FACE_BOXES]


def sampled(tasks: Sequence[Task], pixels: int) -> float:
    """The share of the tasks' work the measure of their result computes on a source of
    ``pixels``: on one decode's strips, twice ``SHARE`` (a strip's margins, a task's
    fixed costs), or all of it when a task reads its whole input before it changes it
    (``WHOLE``); on a copy, each task wholly on the copy's share of the pixels; none
    when only face tasks run (the source's own measure)."""
    todo = measured_tasks(tasks)
    if not todo:
        return 0.0
    if not run_on_strips(todo):
        return resultcopy.share(pixels)
    return 1.0 if any(t.name in WHOLE for t in todo) else 2 * SHARE


def measure(opened: frames.Opened, tasks: Sequence[Task], run: Run) -> Measure:
    """The engine's measure: of the result of ``tasks`` (``run`` applies them) when
    ``reads_result``, else of the source."""
    source = functools.partial(flatness.content, opened)
    todo = measured_tasks(tasks)
    if not reads_result(tasks, opened.frames == 1) or not todo:
        return source
    return functools.partial(_of_result, opened, todo, run, source)


def _of_result(
    opened: frames.Opened, tasks: list[Task], run: Run, source: Measure, kind: str
) -> flatness.Content:
    if kind == flatness.DETAIL:
        return source(kind)
    on_strips, job = run_on_strips(tasks), ops.HOLD_BUDGET.get()
    token = ops.HOLD_BUDGET.set(None)  # the job's holds are the job's
    try:
        if on_strips:
            image = frames.load(opened.name, {"access": "sequential", "fail_on": "error"})
        else:  # bounded, held: the copy's own holds drawn from a budget of its own
            image = resultcopy.copied(opened.name, opened.frame_pixels)
            ops.HOLD_BUDGET.set(resultcopy.budget(image, opened.frame_pixels, job))
        if image.format not in ("uchar", "ushort"):
            return source(kind)  # read by ``samples`` first: measured as the source
        found = flatness.of_strips(strips(run(ops.srgb(image), tasks)), kind)
    except (pyvips.Error, errors.StowageError):
        return source(kind)  # the job's own run says what is wrong
    finally:
        ops.HOLD_BUDGET.reset(token)
    return source(kind) if found is None else found


def strips(image: pyvips.Image) -> list[pyvips.Image]:
    """``SHARE`` of ``image``'s rows in strips of ``STRIP``, spread evenly, top to
    bottom; the whole image when that is not much more."""
    count = math.ceil(image.height * SHARE / STRIP)
    if count * STRIP * 2 >= image.height:
        return [image]
    step = image.height / count
    tops = [
        int(step * (i + 0.5) - STRIP / 2) // flatness.BLOCK * flatness.BLOCK for i in range(count)
    ]
    return [image.crop(0, top, image.width, STRIP) for top in tops]


class Counted:
    """``content``, and what asking it cost: the measure decodes the whole source once
    more (60 frames of a 600x600 WebP: 2 s of a 5.8 s job), the flat measures work on
    each of its pixels besides (``flatness.MEASURE``); measured on the result, they
    measure ``SHARE`` of it, and its tasks compute their ``sampled`` share (``work``)."""

    def __init__(self, content: Measure, seconds: float, pixels: int) -> None:
        self.content, self.seconds, self.pixels, self.spent = content, seconds, pixels, 0.0
        self.work: float | None = None

    def of_result(self, work: float) -> Counted:
        """The same, measuring the result of tasks of ``work`` seconds (``sampled``)."""
        self.work = work
        return self

    def __call__(self, kind: str) -> flatness.Content:
        extra = 0.0 if kind == flatness.DETAIL else flatness.MEASURE * self.pixels / 1e6
        if self.work is not None and kind != flatness.DETAIL:
            extra = extra * SHARE + self.work
        self.spent = self.seconds + extra
        return self.content(kind)
