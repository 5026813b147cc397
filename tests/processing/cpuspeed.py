"""The machine's speed now, for tests that compare a cost estimate with CPU time.

The estimate is in seconds of one core of the 2-core test machine, but that machine's
speed drifts about twice (``processing/svgdraw.py``: feGaussianBlur measured 0.25-0.34 s a
megapixel one day, 0.11-0.18 another; priced 0.22, between the two). A test comparing an
estimate with raw CPU time then failed whichever side its state was on: estimates 4.1-4.6
times an SVG's CPU in the fast state (test_svgcost's bound is 4). Other processes on
the machine (two CPU hogs beside the tests) left CPU time as it was: they stretch wall
time, not CPU time.

``speed`` draws the same blur the price was measured on and divides its CPU time by its
price: the factor by which the machine is slower than the state the rates describe. A
test divides its measured CPU time by it. It is clamped to the documented drift (half to
twice), so that a price wrong by more than the drift still fails."""

from __future__ import annotations

import itertools
import resource
import time
from collections.abc import Callable

import pyvips

# 1000x1000 filtered by feGaussianBlur: svgdraw's 0.22 s a megapixel of region (its
# price) and the empty canvas's 0.006 (measured with it)
_BLUR = (
    b'<svg xmlns="http://www.w3.org/2000/svg" width="1000" height="1000"><defs>'
    b'<filter id="f"><feGaussianBlur stdDeviation="10"/></filter></defs>'
    b'<rect width="1000" height="1000" fill="red" filter="url(#f)"/></svg>'
)
PRICED = 0.22 + 0.006
DRIFT = 2.0
_DRAWN = itertools.count()
#: How long a measured speed stands: the drift is over hours, and a test process asked
#: for it after every case (two drawings, half a second of CPU each time).
STANDS = 10.0
_measured: list[tuple[float, float]] = []  # (when, factor): the last measure


def cpu() -> float:
    """This process's CPU seconds, all its threads, user and system."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def least(run: Callable[[], object], times: int = 2) -> float:
    """The least CPU time of ``times`` runs: a busy machine only adds to one."""
    spent = []
    for _ in range(times):
        started = cpu()
        run()
        spent.append(cpu() - started)
    return min(spent)


def _draw() -> None:
    threads = pyvips.concurrency_get()
    pyvips.concurrency_set(1)  # as a job runs, and as the rate was measured
    try:
        # a new document each time: libvips' cache would answer the same one at once
        unique = b"<!-- %d -->" % next(_DRAWN)
        pyvips.Image.new_from_buffer(_BLUR + unique, "").avg()
    finally:
        pyvips.concurrency_set(threads)


def speed() -> float:
    """How many times slower than the rates' state the machine is now (0.5 to 2)."""
    now = time.monotonic()
    if _measured and now - _measured[-1][0] < STANDS:
        return _measured[-1][1]
    factor = min(max(least(_draw) / PRICED, 1 / DRIFT), DRIFT)
    _measured[:] = [(now, factor)]
    return factor
