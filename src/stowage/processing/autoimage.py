"""``auto_image``: the format the client's ``Accept`` takes, made part of the chain.

A chain's validity never depends on ``Accept``: where the chain answers no image (an
answer task such as ``imagesize``, ``metadata`` or ``ascii``, ``detect_faces=export:true``,
``output=docinfo:true``, or a text task such as ``minify_css``) auto_image has no effect
and is dropped for every client, and the answer does not vary with ``Accept``. It had
been replaced by an ``output`` for a browser taking WebP or AVIF only, which the
"must be the last task" and "takes no other task" checks then refused: one URL was 200
for ``*/*`` and 400 for a browser.
"""

from __future__ import annotations

import functools

from stowage import errors
from stowage.processing import accepts, catalogue, grammar
from stowage.processing.base import Task
from stowage.processing.table import Kind


def negotiated(tasks: list[str], accept: str | None) -> tuple[list[str], bool]:
    """``tasks`` with each ``auto_image`` replaced by the format the client's ``Accept``
    takes (``output=format:avif`` or ``webp``), or removed (the input's format). The
    format so becomes part of the chain, hence of the derivative's cache key. Also says
    whether the answer varies with ``Accept`` (never where the chain answers no image)."""
    found, varies = _negotiated(tuple(tasks), accept)
    return list(found), varies


@functools.lru_cache(maxsize=256)  # a cached auto_image answer asks again per request
def _negotiated(tasks: tuple[str, ...], accept: str | None) -> tuple[tuple[str, ...], bool]:
    if not any(_is_auto(t) for t in tasks):
        return tasks, False
    if _answers_no_image(tasks):
        return tuple(t for t in tasks if not _is_auto(t)), False
    wanted = accepts.accepted_format(accept)
    # AVIF stays auto_image's own choice: an animated source is then answered as WebP,
    # which every client that takes AVIF takes (chain.made_output), and so is an AVIF
    # too costly to make, when the client takes WebP too (chain.lighter_than_avif).
    chosen = f"output=format:{wanted}"
    if wanted == "avif":
        also = accepts.accepted_format(accept, besides="avif")
        chosen = "auto_image=format:avif" + (f",or:{also}" if also else "")
    replaced = [] if wanted is None else [chosen]
    found: list[str] = []
    for task in tasks:
        found.extend(replaced if _is_auto(task) else [task])
    return tuple(found), True


def answers(task: Task) -> bool:
    """Whether the task, last in a chain, answers something that is not the image: an
    answer task, ``detect_faces=export:true``, ``output=docinfo:true``. Anywhere else its
    answer would be dropped without a word, and the picture sent instead."""
    spec = catalogue.TABLE[task.name]
    if spec.kind is Kind.ANSWER:
        return True
    if task.name == "output":
        return task.get("docinfo") is True
    return spec.answer is not None and spec.answer.when(task)


def _answers_no_image(tasks: tuple[str, ...]) -> bool:
    for segment in tasks:
        spec = catalogue.spec(segment.partition("=")[0])
        if spec is not None and spec.kind in (Kind.ANSWER, Kind.TEXT):
            return True
        try:
            task = grammar.parse_task(segment)
        except errors.StowageError:  # refused when the chain is read, whatever Accept says
            continue
        if answers(task):
            return True
    return False


def _is_auto(task: str) -> bool:
    return catalogue.spec(task.partition("=")[0]) is _AUTO


_AUTO = catalogue.TABLE["auto_image"]
