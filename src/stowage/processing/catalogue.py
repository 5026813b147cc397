"""The one task table: every operations module's ``TASKS`` gathered, by name and by
every alias. Adding a module of tasks is one entry in ``MODULES``.

Checked at import: no two tasks share a name or an alias, no task has two parameters
answering to one spelling, and every image task has its operation.
"""

from __future__ import annotations

from stowage import words
from stowage.processing import (
    classifiers,
    colour,
    composite,
    documents,
    effects,
    effects_ascii,
    effects_regions,
    effects_restore,
    facetasks,
    filters,
    geometry,
    minify,
    ocr,
    outputs,
    pageimages,
    previewtask,
    request_tasks,
    shapes,
    shotspec,
    subjects,
    video,
)
from stowage.processing.table import Kind, TaskSpec

MODULES: tuple[tuple[TaskSpec, ...], ...] = (
    geometry.TASKS,
    colour.TASKS,
    filters.TASKS,
    shapes.TASKS,
    outputs.TASKS,
    request_tasks.TASKS,
    effects.TASKS,
    effects_regions.TASKS,
    effects_restore.TASKS,
    effects_ascii.TASKS,
    facetasks.TASKS + subjects.TASKS,
    composite.TASKS,
    documents.TASKS + ocr.TASKS,
    minify.TASKS + classifiers.TASKS,
    video.TASKS + shotspec.TASKS,
    previewtask.TASKS,
    pageimages.TASKS,
)


def _table(modules: tuple[tuple[TaskSpec, ...], ...]) -> dict[str, TaskSpec]:
    table: dict[str, TaskSpec] = {}
    for spec in (spec for tasks in modules for spec in tasks):
        for name in (spec.name, *spec.aliases):
            if name in table:
                raise RuntimeError(f"task {name!r} is declared twice")
            table[name] = spec
        _check(spec)
    return table


def _check(spec: TaskSpec) -> None:
    spellings = [s for param in spec.params for s in (param.name, *param.short)]
    if len(spellings) != len(set(spellings)):
        raise RuntimeError(f"task {spec.name!r} has two parameters with one spelling")
    if (spec.kind is Kind.IMAGE) != (spec.op is not None):
        raise RuntimeError(f"task {spec.name!r}: an image task has an operation, no other")
    known = {param.name for param in spec.params}
    if not set(spec.needs_one_of) <= known or (spec.bare and spec.bare not in known):
        raise RuntimeError(f"task {spec.name!r} names a parameter it does not declare")


TABLE: dict[str, TaskSpec] = _table(MODULES)
#: The tasks' names (no aliases), sorted: what an unsupported task's answer lists.
SUPPORTED: tuple[str, ...] = tuple(sorted({spec.name for spec in TABLE.values()}))


def spec(name: str) -> TaskSpec | None:
    """The declaration a task name or alias spells (ASCII case-insensitive), or None."""
    return TABLE.get(words.word(name))


def names_no_task(segment: str) -> bool:
    """A path segment with no option and no task's name: an API key's place."""
    return "=" not in segment and spec(segment) is None
