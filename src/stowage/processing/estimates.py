"""A job's estimate beside the CPU time it took, so that an operator can see how well the
cost rates fit this machine.

The rates are seconds of one core of the machine they were measured on, and machines
differ in more than speed (``docs/transformations.md``: on a 2-core Xeon the blur took
1.5 times its price and GIF's encoder 0.45 times). The job process records the last
estimate its engine checked against the limits (``cost.check``: the one the job ran
under) and its own CPU time over the job, every thread; the server observes their ratio
(``stowage_processing_cost_fit``)."""

from __future__ import annotations

import contextlib
import resource
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from stowage.processing import metrics

#: Estimates under this are mostly a job's fixed part (a header, a save's set-up), whose
#: CPU time says nothing of the rates
LEAST_OBSERVED = 0.1

_CHECKED: ContextVar[list[float] | None] = ContextVar("checked", default=None)


@dataclass(frozen=True)
class Spent:
    """A job's estimate (seconds of one core, ``None`` when nothing was estimated) and the
    CPU seconds its process spent on it."""

    estimated: float | None
    cpu: float

    def fit(self) -> float | None:
        """CPU time over the estimate, for an estimate worth comparing."""
        if self.estimated is None or self.estimated < LEAST_OBSERVED:
            return None
        return self.cpu / self.estimated


def record(seconds: float) -> None:
    """An estimate checked against the limits, kept when a job is being measured."""
    checked = _CHECKED.get()
    if checked is not None:
        checked.append(seconds)


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


@contextlib.contextmanager
def measured() -> Iterator[list[Spent]]:
    """Measures the job run inside: the list holds its ``Spent`` once the block ends."""
    checked: list[float] = []
    token = _CHECKED.set(checked)
    spent: list[Spent] = []
    started = _cpu()
    try:
        yield spent
    finally:
        _CHECKED.reset(token)
        spent.append(Spent(checked[-1] if checked else None, _cpu() - started))


def observe(spent: Spent) -> None:
    """The server's side: a job's fit counted (``stowage_processing_cost_fit``)."""
    fit = spent.fit()
    if fit is not None:
        metrics.COST_FIT.observe(fit)
