"""A server process's probe process (``probeserver.py``): media files are read by a child
that a sandboxed process holding libav forks for each, instead of an ffprobe run each
(whose start-up, about 0.05 s of loading libraries, was a sixth of a 1080p thumbnail
job's CPU).

The probe process is started on the first read and again after it ended; it runs in
ffmpeg's sandbox (``sandbox.py``: a network namespace of its own, ``nice``, killed when
the server process dies) and each child takes its own limits (memory, CPU, an alarm at
its deadline). A read that is cancelled or runs past its deadline kills its child.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stowage.processing import sandbox

#: Debian's Python, with python3-av: the libav of the Debian ffmpeg that converts.
PYTHON = "/usr/bin/python3"
PROGRAM = Path(__file__).with_name("probeserver.py")
_START_SECONDS = 30.0
_GRACE = 5.0  # past a child's own alarm, before the read gives up on the process
_MAX_READING = 4 * 1024 * 1024  # bytes of a reading (a file of many streams)
_DEADLINE_SIGNALS = (-signal.SIGALRM, -signal.SIGXCPU)


class Refused(Exception):
    """The file could not be read: a reason the file gives."""


class Prober:
    def __init__(self, folder: Path) -> None:
        self.folder = folder  # the probe process's working directory
        self._proc: asyncio.subprocess.Process | None = None
        self._unreaped: set[asyncio.subprocess.Process] = set()  # ended by close() or _started()
        self._replies: asyncio.Task[None] | None = None
        #: Each read's ask id: the process it was sent to, and its exit status to come.
        self._waiting: dict[int, tuple[asyncio.subprocess.Process, asyncio.Future[int]]] = {}
        self._ids = itertools.count(1)
        self._starting = asyncio.Lock()

    async def read(
        self, path: Path, formats: str, *, seconds: float, memory: int
    ) -> dict[str, Any]:
        """``path``'s reading in ffprobe's JSON shape (``format``, ``streams``), opened
        by a demuxer of ``formats`` only; ``Refused`` when libav refuses it, when the
        child dies on it or runs past ``seconds``; RuntimeError when the probe process
        cannot run (python3-av missing: the job is retried, then failed)."""
        proc = await self._started()
        ask_id = next(self._ids)
        out = path.parent / f".probe-{ask_id}.json"
        done: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._waiting[ask_id] = (proc, done)
        ask = {"id": ask_id, "path": str(path), "formats": formats, "out": str(out)}
        try:
            _send(proc, ask | {"seconds": seconds, "memory": memory})
            if self._proc is not proc:  # it ended before this read was waiting on it
                raise RuntimeError("the probe process ended")
            async with asyncio.timeout(seconds + _GRACE):
                status = await done
        except BaseException as exc:
            with contextlib.suppress(Exception):
                _send(proc, {"kill": ask_id})
            if isinstance(exc, TimeoutError):
                raise Refused(f"the probe ran past its {seconds:g} s deadline") from exc
            raise
        finally:
            self._waiting.pop(ask_id, None)
        try:
            return _reading(out, status, seconds)
        finally:
            out.unlink(missing_ok=True)

    async def close(self) -> None:
        """Ends the probe process and any child still reading."""
        self._proc = None
        await self._reap(lambda proc: True)
        if self._replies is not None:
            await asyncio.gather(self._replies, return_exceptions=True)
            self._replies = None

    async def _started(self) -> asyncio.subprocess.Process:
        async with self._starting:
            if self._proc is not None and self._proc.returncode is None:
                return self._proc
            await self._reap(lambda proc: proc.returncode is not None)  # died: replaced here
            caps = sandbox.Caps(die_with_parent=True)
            if (tool := sandbox.missing((PYTHON,), caps)) is not None:
                raise RuntimeError(f"{tool} is not installed on this node (Debian: python3-av)")
            self.folder.mkdir(parents=True, exist_ok=True)
            proc = await sandbox.spawn(
                *sandbox.prefix(caps),
                PYTHON,
                "-I",
                str(PROGRAM),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
                cwd=self.folder,
                start_new_session=True,
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"},
            )
            self._unreaped.add(proc)
            await _ready(proc)
            self._proc = proc
            self._replies = asyncio.get_running_loop().create_task(self._answer(proc))
            return proc

    async def _reap(self, which: Callable[[asyncio.subprocess.Process], bool]) -> None:
        """A process the loop forgot (killed, never waited) was closed later by the garbage
        collector, on a closed loop: every one started is reaped here."""
        for proc in [proc for proc in self._unreaped if which(proc)]:
            self._unreaped.discard(proc)
            await sandbox.reap(proc)

    async def _answer(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdout is not None
        try:
            while line := await proc.stdout.readline():
                said = json.loads(line)
                _, waiting = self._waiting.get(said["id"], (proc, None))
                if waiting is not None and not waiting.done():
                    waiting.set_result(int(said["status"]))
        finally:
            if self._proc is proc:
                self._proc = None
            for sent_to, waiting in self._waiting.values():  # not a newer process's reads
                if sent_to is proc and not waiting.done():
                    waiting.set_exception(RuntimeError("the probe process ended"))


async def _ready(proc: asyncio.subprocess.Process) -> None:
    assert proc.stdout is not None
    try:
        async with asyncio.timeout(_START_SECONDS):
            said = json.loads(await proc.stdout.readline() or b"{}")
    except (TimeoutError, ValueError):
        said = {}
    if said.get("ready") is not True:
        await sandbox.reap(proc)
        why = said.get("error", "no answer")
        raise RuntimeError(f"the probe process did not start: {why} (Debian: python3-av)")


def _send(proc: asyncio.subprocess.Process, message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(message).encode() + b"\n")


def _reading(out: Path, status: int, seconds: float) -> dict[str, Any]:
    if status in _DEADLINE_SIGNALS:
        raise Refused(f"the probe ran past its {seconds:g} s deadline")
    if status != 0:
        raise Refused(f"the probe failed on the file (exit status {status})")
    with out.open("rb") as file:
        said = file.read(_MAX_READING + 1)
    if len(said) > _MAX_READING:
        raise Refused(f"the file's reading is larger than {_MAX_READING} bytes")
    found = json.loads(said or b"{}")
    if "error" in found:
        raise Refused(f"the probe refused the file: {str(found['error'])[:300]}")
    return dict(found)
