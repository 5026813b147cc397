"""A job process: renders the jobs its server sends, one at a time, until its input ends.

Run as ``python -m stowage.processing.worker THREADS MEMORY_BYTES PILLOW_JPEG CHANNEL
CONFINED`` by the job pool (``pool.py``): PILLOW_JPEG is 1 or 0
(``processing_pillow_jpeg``), CHANNEL the descriptor of the Unix socket that hands it each
job's sources (``jobfiles.py``), CONFINED 1 when it runs in bubblewrap's namespaces. Jobs
and replies are length-prefixed pickles on stdin and on the original stdout (a result
comes with its estimate and CPU time, ``estimates.Spent``); fd 1 then
points at stderr, so that nothing a library prints can corrupt a reply.

In a process of its own a job can be stopped at its deadline whatever libvips is doing
(libvips checks for a stop only between tiles of the result), a crafted image that makes
libvips crash ends this process and not the server, and the address-space limit turns a
runaway allocation into a refused job.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pickle
import resource
import signal
import socket
import sys
from typing import IO, Any

from stowage import errors
from stowage.processing import composite, estimates, jobfiles, minify, pdfcreate, saving
from stowage.processing.base import BigJob, Job
from stowage.processing.vips import VipsEngine

_PR_SET_PDEATHSIG = 1
LENGTH = 4  # bytes of a frame's big-endian length


def read_frame(stream: IO[bytes]) -> Any | None:
    """The next pickled frame, or None at the end of the stream."""
    head = stream.read(LENGTH)
    if len(head) < LENGTH:
        return None
    return pickle.loads(stream.read(int.from_bytes(head, "big")))


#: The first frame a job process writes, once it can take a job.
READY = "ready"


def frame(value: object) -> bytes:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    return len(data).to_bytes(LENGTH, "big") + data


def serve(engine: VipsEngine, jobs: IO[bytes], replies: IO[bytes], channel: socket.socket) -> None:
    while (job := read_frame(jobs)) is not None:
        assert isinstance(job, Job)
        fds = jobfiles.receive(channel)
        try:
            reply = _reply(engine, jobfiles.handed(job, fds))
        finally:
            for fd in fds:
                os.close(fd)
        if reply[0] == "ok":
            jobfiles.settle(job.dest)
        replies.write(frame(reply))
        replies.flush()


def _reply(engine: VipsEngine, job: Job) -> tuple[object, ...]:
    try:
        with estimates.measured() as spent:
            made = _made(engine, job)
        # Every result within the output byte limit, not only an image saved by libvips:
        # a text answer (ascii, minify_css), a PDF of several files, a source answered as
        # it is (quality on a PNG) were cached whatever their size.
        saving.capped(job.dest, job.limits.max_output_bytes)
        return ("ok", made, spent[0])
    except (errors.StowageError, BigJob) as exc:
        return ("error", exc)
    except MemoryError:
        return ("error", errors.ImageTooLarge("the transformation needs too much memory"))


def _made(engine: VipsEngine, job: Job) -> object:
    if minify.applies(job.chain):  # text, not an image: libvips never sees it
        return minify.render(job)
    if pdfcreate.applies(job.chain):  # several sources into one PDF
        return pdfcreate.render(job)
    with composite.using(job.sources, job.limits, job.listed, job.dest):
        return job.render_with(engine)


def _die_with_parent() -> None:
    """A server that dies (even by SIGKILL) takes its job processes with it (when
    confined, bubblewrap's ``--die-with-parent`` does, and its init is our parent 1)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() == 1:  # the parent was gone before the call above
        sys.exit(0)


def main() -> None:
    threads, memory = int(sys.argv[1]), int(sys.argv[2])
    pillow_jpeg = sys.argv[3] != "0"
    channel = socket.socket(fileno=int(sys.argv[4]))
    if sys.argv[5] != "1":
        _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server stops its jobs itself
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    engine = VipsEngine(threads_per_job=threads, pillow_jpeg=pillow_jpeg)
    if memory > 0:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    replies.write(frame(READY))  # its imports done: a job's time is the job's alone
    replies.flush()
    serve(engine, sys.stdin.buffer, replies, channel)


if __name__ == "__main__":
    main()
