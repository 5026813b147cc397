"""Several worker processes serving the same ports (``--workers N``).

The parent runs start-up recovery once (pending rows of interrupted stores and the
providers' temporary files), closes everything, then forks the workers. Each worker
binds the API and CDN ports with ``SO_REUSEPORT`` (the kernel spreads connections
over them) and starts its service *without* recovery: a worker must never sweep, since
a pending row or a temp file may belong to an upload live in another worker.
Overwrite and delete of one handle are serialised across workers by the registry's
``handle_lock`` (a file lock for SQLite, an advisory lock for PostgreSQL).

The parent forwards SIGTERM/SIGINT to the workers and waits for them. If a worker
dies on its own, the parent stops the others and exits with status 1: restarting is
left to the supervisor (systemd, a container runtime), which also re-runs recovery.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
from collections.abc import Callable, Coroutine
from types import FrameType
from typing import Any

from stowage.assembly import assemble
from stowage.config import Settings
from stowage.http.app import serve
from stowage.observe import multiproc

log = logging.getLogger("stowage")
PR_SET_PDEATHSIG = 1
Runner = Callable[[Coroutine[Any, Any, Any]], Any]


def worker_count(settings: Settings) -> int:
    return settings.workers if settings.workers > 0 else os.cpu_count() or 1


async def recover_once(settings: Settings) -> int:
    parts = assemble(settings)
    await parts.open()
    try:
        return await parts.recovery.recover()
    finally:
        await parts.close()


def serve_workers(settings: Settings, run: Runner) -> int:
    """Recovers, forks the workers, supervises them; returns the exit status."""
    with multiproc.shared_metrics():
        cleaned = run(recover_once(settings))
        count = worker_count(settings)
        log.info("start-up recovery cleaned %s items; starting %s workers", cleaned, count)
        pids = {_fork(settings, run) for _ in range(count)}
        return _supervise(pids)


def _fork(settings: Settings, run: Runner) -> int:
    pid = os.fork()
    if pid:
        return pid
    status = 1
    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        _die_with_parent()
        run(serve(settings, recover=False, reuse_port=True))
        status = 0
    except BaseException:
        log.exception("worker %s failed", os.getpid())
    finally:
        logging.shutdown()
        os._exit(status)


def _die_with_parent() -> None:
    """Linux: a worker gets SIGTERM if the parent is killed without stopping it."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _supervise(pids: set[int]) -> int:
    stopping = False

    def stop(signum: int = signal.SIGTERM, frame: FrameType | None = None) -> None:
        nonlocal stopping
        stopping = True
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    status = 0
    while pids:
        pid, code = os.wait()
        pids.discard(pid)
        multiproc.worker_died(pid)
        if not stopping:
            log.error("worker %s exited (status %s): stopping the others", pid, code)
            status = 1
            stop()
    return status
