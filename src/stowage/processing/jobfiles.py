"""A job's files as a confined job process gets them (``pool.py``, ``worker.py``).

A job process sees neither the storage nor the spool folder (``sandbox.job_jail``): the
server opens the job's sources and hands the process their descriptors over a Unix
socket (``SCM_RIGHTS``), which it reads as ``/proc/self/fd/N`` and closes after the job;
it writes its result, and anything an engine writes beside it, in a folder of its own
that the server empties after each job, moving the result to its destination first.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path

from stowage.processing import sandbox
from stowage.processing.base import Job

BATCH = 200  # descriptors in one message: the kernel takes at most 253
_MORE, _LAST = b"+", b"."
HOME = sandbox.JOB_HOME
STALE_SECONDS = 3600.0  # a job folder this old, of a server gone, is swept


def source_paths(job: Job) -> list[Path]:
    return [job.source, *(path for _, path in job.sources)]


@contextlib.contextmanager
def opened(paths: list[Path]) -> Iterator[list[int]]:
    """Each path opened for reading, closed when the block ends."""
    fds: list[int] = []
    try:
        for path in paths:
            fds.append(os.open(path, os.O_RDONLY | os.O_CLOEXEC))
        yield fds
    finally:
        for fd in fds:
            os.close(fd)


def send(channel: socket.socket, fds: list[int]) -> None:
    """The descriptors in messages of at most ``BATCH``; one message even for none."""
    batches = [fds[i : i + BATCH] for i in range(0, len(fds), BATCH)] or [[]]
    for number, batch in enumerate(batches):
        socket.send_fds(channel, [_MORE if number < len(batches) - 1 else _LAST], batch)


def receive(channel: socket.socket) -> list[int]:
    """The descriptors of the next job, in the order they were sent."""
    found: list[int] = []
    while True:
        data, fds, _, _ = socket.recv_fds(channel, 1, BATCH)
        found += fds
        if data != _MORE:
            if data != _LAST:
                raise EOFError("the server closed the job channel")
            return found


def handed(job: Job, fds: list[int]) -> Job:
    """``job`` reading its sources through the descriptors handed for them."""
    paths = [Path(f"/proc/self/fd/{fd}") for fd in fds]
    others = tuple((h, p) for (h, _), p in zip(job.sources, paths[1:], strict=True))
    return dataclasses.replace(job, source=paths[0], sources=others)


def in_folder(job: Job, folder: Path) -> Job:
    """``job`` writing its result in ``folder`` (the job process's own)."""
    return dataclasses.replace(job, dest=folder / job.dest.name)


def settle(made: Path) -> None:
    """A result made readable to all and its data synced, in the job process, before it
    answers: the server then renames it into the derivative cache on its event loop,
    without a thread's hand-off for the sync (``DerivativeCache.put``'s ``synced``)."""
    try:
        fd = os.open(made, os.O_RDONLY)
    except FileNotFoundError:
        return  # its answer is in its reply
    try:
        os.fchmod(fd, 0o644)
        os.fsync(fd)
    finally:
        os.close(fd)


def deliver(made: Path, dest: Path) -> None:
    """The result moved where the server wants it: a rename on one file system, a copy
    across two. A job that wrote nothing (its answer is in its reply) leaves ``dest``."""
    try:
        os.replace(made, dest)
    except FileNotFoundError:
        if made.exists():
            raise  # the destination's folder is gone
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        shutil.move(made, dest)


def empty(folder: Path) -> None:
    """What the last job left in ``folder``: the next job finds nothing of it."""
    for entry in os.scandir(folder):
        if entry.name == HOME:
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)


def sweep(work: Path) -> None:
    """Folders that job processes of a server no longer running left (a crash): named
    ``job-<server pid>-*``, and old, since a container's pids are not this host's."""
    work.mkdir(parents=True, exist_ok=True)
    stale = time.time() - STALE_SECONDS
    for folder in work.glob("job-*-*"):
        pid = folder.name.split("-")[1]
        with contextlib.suppress(OSError):
            if pid.isdigit() and not _alive(int(pid)) and folder.stat().st_mtime < stale:
                shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's
    return True
