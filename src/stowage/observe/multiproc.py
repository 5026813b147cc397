"""The directory where the workers of one ``serve --workers N`` run keep their metric
values (prometheus_client's multiprocess mode).

It must be chosen before ``prometheus_client`` is imported (the library picks its value
store at import), so this module does not import it. Each run gets a fresh, private
(0700) directory: values of an earlier run, or of another server on the machine, can
never be summed into this one's. It is removed when the run ends.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator

ENV = "PROMETHEUS_MULTIPROC_DIR"


@contextlib.contextmanager
def shared_metrics() -> Iterator[str]:
    """Sets up the directory for the workers about to be forked; removes it afterwards."""
    if "prometheus_client" in sys.modules:
        raise RuntimeError("prometheus_client was imported before the metrics directory was set")
    path = tempfile.mkdtemp(prefix="stowage-metrics-")
    os.environ[ENV] = path
    try:
        yield path
    finally:
        os.environ.pop(ENV, None)
        shutil.rmtree(path, ignore_errors=True)


def single_process() -> None:
    """One worker: values in memory, whatever the environment says."""
    os.environ.pop(ENV, None)
    os.environ.pop(ENV.lower(), None)


def worker_died(pid: int) -> None:
    """Drops a dead worker's live gauges (its counters stay: they are totals)."""
    if os.environ.get(ENV) and "prometheus_client" in sys.modules:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)  # type: ignore[no-untyped-call]
