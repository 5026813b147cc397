"""``tags`` and ``sfw``: the hosted service's image classifiers. This server runs no
classifier model; both are in the table so that their use is answered with
``TASK_NOT_AVAILABLE`` (400), told apart from an unknown task (``docs/errors.md``)."""

from __future__ import annotations

from stowage.processing.table import Kind, TaskSpec

_WHY = "image classification is not run by this server (docs/decisions.md)"

TASKS: tuple[TaskSpec, ...] = (
    TaskSpec("tags", kind=Kind.ANSWER, unavailable=_WHY, doc="not available: " + _WHY),
    TaskSpec("sfw", kind=Kind.ANSWER, unavailable=_WHY, doc="not available: " + _WHY),
)
