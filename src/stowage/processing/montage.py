"""How the engine makes a montage of several images: a collage or an animation of
several sources (``composite.py``'s tasks), or an animated source kept as one. In each
the chain's image tasks run through ``run`` (the engine's steps, ``vips._steps``) on
the right image: a collage's file or canvas, each frame of an animation.

One rule decides the frames an animation is made of, for the cost estimate and for the
render alike (``placed``): one frame per listed file, only the first of them for a
result without animation (JPEG, PNG, an answer), each file turned by its EXIF
orientation first when the chain turns by it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pyvips

from stowage.processing import catalogue, composite, frames, geometry
from stowage.processing.base import Chain, Limits, Output, Task
from stowage.processing.table import Kind

#: The chain's image tasks run on an image: ``(image, tasks) -> image``.
Run = Callable[[pyvips.Image, list[Task]], pyvips.Image]


def composed(opened: frames.Opened, chain: Chain, output: Output, run: Run) -> pyvips.Image | None:
    """A collage or an animation of several sources (one per chain: ``chain.parse``). A
    collage places the file as the tasks before it made it, and the tasks after it run on
    the collage; an animation's tasks run on each frame, wherever they are (a turn by
    EXIF on each file before it is framed: every frame is then fitted and aligned)."""
    at = _built_at(chain)
    if at is None:
        return None
    before, after = image_tasks(chain.tasks[:at]), image_tasks(chain.tasks[at + 1 :])
    made, first = chain.tasks[at], _first_frame(opened)
    if made.name == "collage":
        first, todo = run(first, before), after
    else:
        todo = before + after
    return composite.build(made, first, lambda i: run(i, todo), **_framing(chain, output))


def placed(opened: frames.Opened, chain: Chain, output: Output) -> list[tuple[int, int]]:
    """The sizes of the images a collage or an animation in the chain places (none
    without one): what the cost estimate counts."""
    at = _built_at(chain)
    if at is None:
        return []
    found = composite.placed(chain.tasks[at], _first_frame(opened), **_framing(chain, output))
    return [(int(image.width), int(image.height)) for image in found]


def animated(opened: frames.Opened, chain: Chain, limits: Limits, run: Run) -> pyvips.Image | None:
    """An animation kept as one: the chain on each frame (shrink-on-load does not apply)."""
    if opened.frames == 1:
        return None
    todo = image_tasks(chain.tasks)
    strip = frames.each_frame(opened, opened.image, lambda f: run(f, todo))
    frames.check_made(strip, limits)
    return strip


def image_tasks(tasks: Sequence[Task]) -> list[Task]:
    """The tasks with an image operation (not save options, answers or request tasks)."""
    return [t for t in tasks if catalogue.TABLE[t.name].kind is Kind.IMAGE]


def _built_at(chain: Chain) -> int | None:
    return next((i for i, t in enumerate(chain.tasks) if t.name in composite.BUILT), None)


def _first_frame(opened: frames.Opened) -> pyvips.Image:
    return opened.image.extract_area(0, 0, opened.image.width, opened.frame_height)


def _framing(chain: Chain, output: Output) -> dict[str, bool]:
    """How an animation is made for this result: one frame for a format without
    animation or an answer (``still``), each file turned by EXIF first (``autorotate``)."""
    still = output.format not in frames.ANIMATED_OUTPUTS
    return {"still": still, "autorotate": any(geometry.turns_by_exif(t) for t in chain.tasks)}
