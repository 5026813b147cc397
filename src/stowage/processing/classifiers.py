"""``tags``, ``sfw``, ``copyright`` and ``doc_detection``: the hosted service's
machine-learned image tasks (the last two built by filestack-swift). This server runs no
such model; they are in the table so that their use is answered with
``TASK_NOT_AVAILABLE`` (400), told apart from an unknown task (``docs/errors.md``)."""

from __future__ import annotations

from stowage.processing.table import Kind, TaskSpec

_WHY = "image classification is not run by this server (docs/decisions.md)"

_COPYRIGHT = "copyright detection is not run by this server (docs/decisions.md)"
_DOCUMENTS = "document detection is not run by this server (docs/decisions.md)"

TASKS: tuple[TaskSpec, ...] = (
    TaskSpec("tags", kind=Kind.ANSWER, unavailable=_WHY, doc="not available: " + _WHY),
    TaskSpec("sfw", kind=Kind.ANSWER, unavailable=_WHY, doc="not available: " + _WHY),
    TaskSpec(
        "copyright", kind=Kind.ANSWER, unavailable=_COPYRIGHT, doc="not available: " + _COPYRIGHT
    ),
    TaskSpec(
        "doc_detection",
        kind=Kind.ANSWER,
        unavailable=_DOCUMENTS,
        doc="not available: " + _DOCUMENTS,
    ),
)
