"""The quality a JPEG was saved at, and the hosted ``quality`` task's rules.

``output=quality:input`` saves a JPEG at its source's quality: read from the source's
luminance quantisation table (its header: Pillow reads the tables without decoding a
pixel), by inverting libjpeg's quality scaling on the median ratio of that table to the
standard's. For a libjpeg-based encoder (libvips, Pillow, ImageMagick, cameras' firmware
mostly) it is within one of the quality it was given; a source that is no JPEG has no
quality to keep, and the encoder's default applies.

The ``quality`` task alone (the hosted documentation, as filestack-swift quotes it): a
file that is no JPEG is answered as it is, and a JPEG saved again that is not smaller
than the original is answered as the original.
"""

from __future__ import annotations

import dataclasses
import statistics
from pathlib import Path

import PIL.Image

from stowage.processing.base import Chain, Task

#: The JPEG standard's luminance table (ITU T.81, Annex K), in natural order, as Pillow
#: gives a file's tables.
STANDARD = (
    16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55,
    14, 13, 16, 24, 40, 57, 69, 56, 14, 17, 22, 29, 51, 87, 80, 62,
    18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92,
    49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99,
)  # fmt: skip


def estimated(source: Path) -> int | None:
    """The quality ``source`` was saved at (1-100), or None when it is no JPEG."""
    try:
        with PIL.Image.open(source, formats=("JPEG",)) as image:
            table = image.quantization.get(0) if hasattr(image, "quantization") else None
    except (OSError, ValueError, SyntaxError):
        return None
    if not table or len(table) != len(STANDARD):
        return None
    if all(value == 1 for value in table):
        return 100
    scale = statistics.median(q * 100 / t for q, t in zip(table, STANDARD, strict=True))
    quality = (200 - scale) / 2 if scale <= 100 else 5000 / scale
    return int(min(100, max(1, round(quality))))


def resolved(chain: Chain, source: Path) -> Chain:
    """``chain`` with each ``output=quality:input`` as the source's quality, or without
    that option when the source is no JPEG."""
    if not any(t.name == "output" and t.get("quality") == "input" for t in chain.tasks):
        return chain
    found = estimated(source)
    return dataclasses.replace(chain, tasks=tuple(_with(t, found) for t in chain.tasks))


def _with(task: Task, quality: int | None) -> Task:
    if task.name != "output" or task.get("quality") != "input":
        return task
    kept = tuple((k, v) for k, v in task.options if k != "quality")
    added = (("quality", quality),) if quality is not None else ()
    return Task(task.name, tuple(sorted(kept + added)))


def only_compress(chain: Chain) -> bool:
    """``compress`` alone (``output=compress:true`` too), metadata kept: a palette PNG or
    an optimised JPEG saved again can be larger than it was; the source is answered then."""
    return bool(chain.tasks) and all(_compresses_only(task) for task in chain.tasks)


def _compresses_only(task: Task) -> bool:
    if task.name == "compress":
        return task.get("metadata") is not True
    return task.name == "output" and [name for name, _ in task.options] == ["compress"]


def only_quality(chain: Chain) -> bool:
    """The ``quality`` task alone: the hosted rules apply (``VipsEngine.render``)."""
    return bool(chain.tasks) and all(t.name == "quality" for t in chain.tasks)
