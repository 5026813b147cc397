"""The cost estimate's steps and the holds the engine will take of them (``holding``):
what each step costs once its holds are known (cost.py builds the steps)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from stowage.processing import catalogue, holding
from stowage.processing.base import Task
from stowage.processing.table import Kind


@dataclass(frozen=True)
class Step:
    """A task's seconds on one frame, and how it makes the steps before it computed."""

    task: Task
    seconds: float
    amplification: float  # times it computes what comes before it (a blur's margins)
    turn: float  # the same, a turn left lazy (``holding.strip_reads``); else 1
    site: holding.Site


def sites(steps: Sequence[Step], *, still: bool) -> list[holding.Site]:
    """The holds the engine asks for, step by step: besides each task's own, a still's
    first task that shrinks on load is held when a later one reads out of order
    (``vips._pipeline``)."""
    sites = [step.site for step in steps]
    kinds = [catalogue.TABLE[step.task.name] for step in steps]
    plain = still and all(spec.kind is Kind.IMAGE for spec in kinds)  # no collage, animate
    shrinks = bool(kinds) and kinds[0].load_op is not None
    if plain and shrinks and any(spec.random_access for spec in kinds[1:]):
        sites[0] = dataclasses.replace(sites[0], result=True)
    return sites


def computed(steps: Sequence[Step], pattern: holding.Pattern) -> float:
    """Seconds of one frame's steps with these holds. A step held in memory is computed
    once, whatever reads it after, and so is what comes before it; so is the input of a
    task that measures it, held. Not held, that input is computed once more for the
    measure (n such tasks: n squared); a lazy turn computes what comes before it once a
    strip of it (not again for a lazy turn before it, which it asks for whole)."""
    total, amplified, whole = 0.0, 1.0, False
    for step, (held_input, held_result) in zip(reversed(steps), reversed(pattern), strict=True):
        if held_result:
            amplified, whole = 1.0, False
        total += step.seconds * amplified
        if held_input:
            amplified, whole = 1.0, False
        elif step.turn > 1.0 and not held_result:
            amplified *= 1.0 if whole else step.turn
            whole = True
        else:  # a measure not held computes its input once more, besides its reads
            amplified = amplified * step.amplification + (1.0 if step.site.input else 0.0)
    return total
