"""The task table's declarations: every transformation task is declared once, with its
names, its parameters (long name, other spellings, check, default) and its operation.

A module of operations declares its tasks beside them (``TASKS: tuple[TaskSpec, ...]``);
``stowage.processing.catalogue`` gathers every module's declarations into the one table
that the URL grammar, the engine and the docs read. An operation reads its options by
their long names only (``task.get("width")``): short names and aliases are resolved when
the URL is parsed.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stowage.processing.base import Output, Task, Value
from stowage.processing.params import Convert

#: An operation on pixels: ``(pyvips.Image, Task) -> pyvips.Image``, lazy (nothing is
#: computed until the result is saved). Typed loosely so that this module, read by the
#: URL grammar, does not import libvips.
Op = Callable[[Any, Task], Any]
#: An operation that can shrink on load, first in a chain: ``(scale, task, width,
#: height) -> pyvips.Image`` where ``scale(width, height, size_mode)`` asks the decoder
#: for a smaller image (``geometry.resize_with``).
LoadOp = Callable[[Any, Task, int, int], Any]
#: The size ``(width, height)`` an operation makes of a ``width`` x ``height`` image, as
#: the operation computes it (or a little more: cost.py's estimate may be high, not low).
Size = Callable[[Task, int, int], tuple[int, int]]


def _always(task: Task) -> bool:
    return True


@dataclass(frozen=True)
class Answer:
    """A task whose result is no image but text (HTML, JSON): ``render`` turns the image
    at that step of the chain into it; ``when`` says whether the task, last in a chain,
    answers (``detect_faces`` does only with ``export:true``)."""

    render: Callable[[Any, Task], str]  # (pyvips.Image, Task) -> the answer's text
    output: Output
    when: Callable[[Task], bool] = _always


class Kind(enum.Enum):
    IMAGE = "image"  # an operation on pixels (``op`` is set)
    SAVE = "save"  # only changes how the result is saved (output, quality, compress, ...)
    ANSWER = "answer"  # the result is not an image (imagesize, metadata, ascii, ...)
    FILES = "files"  # reads several sources (zip, collage, animate)
    REQUEST = "request"  # about the request, not the pixels (security, cache, store, ...)
    TEXT = "text"  # reads the source as text, not an image (minify_js, minify_css)


@dataclass(frozen=True)
class Param:
    name: str  # the long name, as operations read it
    check: Convert  # parsed value -> checked value; ValueError with a reason
    short: tuple[str, ...] = ()  # other spellings the hosted service takes: "w", "h", ...
    default: Value | None = None  # the documented default (for the docs; ops apply it)


@dataclass(frozen=True)
class TaskSpec:
    name: str
    params: tuple[Param, ...] = ()
    op: Op | None = None  # set for Kind.IMAGE
    kind: Kind = Kind.IMAGE
    aliases: tuple[str, ...] = ()  # other task names: round_corners
    needs_one_of: tuple[str, ...] = ()  # at least one of these parameters is given
    random_access: bool = False  # its libvips operation reads out of order
    doc: str = ""  # one line for docs/transformations.md
    answer: Answer | None = None  # its result is text, not an image (when it is last)
    load_op: LoadOp | None = None  # shrinks on load when first in a chain
    #: The size its operation makes (None: the image's own); ``cost.estimate`` follows it.
    size: Size | None = None
    #: The largest image its operation makes on the way, when larger than its result
    #: (smart_crop's cover); the estimate counts that one's pixels.
    works_on: Size | None = None
    #: Whether its operation computes its result once into memory (``ops.held``): what
    #: reads it after, and what came before, are then not computed again.
    holds: Callable[[Task], bool] | None = None
    #: Whether its operation measures its whole input before it changes it (enhance's
    #: percentiles), or reads it again around every tile (shadow's blurred outline): the
    #: engine holds that input (``ops.held``), else every such task computed the chain
    #: before it again, and n of them cost n squared.
    measures: bool = False
    #: Whether its operation reads colours as sRGB's (sepia's matrix, modulate's LCh, the
    #: luminance of monochrome): a profile the result would keep is applied first.
    maps_colours: bool = False
    bare: str | None = None  # the parameter a value without a name sets: cache=false
    reads_list: bool = False  # a ``[h1,h2]`` source is its input (animate, zip, pdfcreate)
    #: Why a task of the hosted service is not run here (tags, sfw): its use is refused
    #: with TASK_NOT_AVAILABLE, distinct from an unknown task's UNSUPPORTED_TASK.
    unavailable: str = ""

    def param(self, spelling: str) -> Param | None:
        for param in self.params:
            if spelling == param.name or spelling in param.short:
                return param
        return None
