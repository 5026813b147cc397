"""What a task decides from an image's content (the faces found, the window a crop
keeps), decided once for an animation, on its first frame, and kept for the others.

Each frame decided alone, ``crop_faces`` cut every frame to its own box (frames of
different sizes, joined into garbage) and ``smart_crop`` moved its window from frame to
frame (the animation shook). The tasks ask ``decided``; ``frames.each_frame`` opens a
record for the frames of one animation, in which the n-th decision of the first frame is
the n-th of every other (a chain's tasks run in the same order on every frame). A still
has no record: its decisions are its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass
class _Record:
    values: list[Any] = field(default_factory=list)
    at: int = 0  # the next decision's place in ``values`` on the frame being made


_RECORD: ContextVar[_Record | None] = ContextVar("decisions", default=None)


def decided(decide: Callable[[], T]) -> T:
    """``decide()`` on a still and on an animation's first frame; on its other frames,
    what the first frame decided at the same step."""
    record = _RECORD.get()
    if record is None:
        return decide()
    if record.at == len(record.values):
        record.values.append(decide())
    value: T = record.values[record.at]
    record.at += 1
    return value


@contextmanager
def kept() -> Iterator[Callable[[], None]]:
    """A record for the frames of one animation; call what it yields before each frame."""
    record = _Record()

    def next_frame() -> None:
        record.at = 0

    token = _RECORD.set(record)
    try:
        yield next_frame
    finally:
        _RECORD.reset(token)
