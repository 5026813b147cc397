"""The sandbox an engine that opens untrusted files runs in (ffmpeg, LibreOffice,
Tesseract; the image job processes take ``job_jail``, bubblewrap's part only).

An engine is started as ``prefix(...) + argv`` with ``spawn_options(...)``:

- ``unshare -n``: a network namespace of its own, with only a loopback that is down,
  so a document's remote image or link, or a media playlist's URL, reaches nothing
  (not even this host's 127.0.0.1); or, for an engine that opens what a document names
  (LibreOffice), ``bwrap`` (bubblewrap): that and a file system of /usr, a few
  read-only paths and the job folder only (``Caps.readable``);
- ``prlimit``: an address-space limit (a runaway allocation is refused) and a file-size
  limit (no output past it);
- ``nice``: below the server's own processes, so requests stay answered during a job;
- a session of its own (``start_new_session``), killed as a group at the deadline
  (``kill_group``), children included;
- the job folder as its working directory and as HOME and TMPDIR, and an environment of
  PATH and the C locale only: nothing of the server's environment (credentials) reaches
  it, and what an engine writes of its own lands in the job folder, removed with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NICENESS = 10
JOB_HOME = "home"  # a job process's HOME in its folder, kept between its jobs (font caches)


@dataclass(frozen=True)
class Caps:
    """What a sandboxed engine may use."""

    memory: int = 0  # RLIMIT_AS, bytes; 0: none
    output_bytes: int = 0  # RLIMIT_FSIZE, bytes; 0: none
    network: bool = False  # True only for a trusted engine that needs it (none today)
    #: None: the engine sees the whole file system (ffmpeg, whose whitelists let it open
    #: its input only). Else it is confined by bubblewrap: it sees /usr, these paths
    #: read-only, its job folder read-write, a private /tmp and a /proc of its own
    #: processes, and nothing else (a document's ``file:///etc/passwd`` finds nothing).
    readable: tuple[str, ...] | None = None
    cpu_seconds: int = 0  # RLIMIT_CPU; 0: none
    #: Killed when the process that started it dies (a job process killed at its
    #: deadline takes the engine with it even if no one is left to kill its group).
    die_with_parent: bool = False


def missing(tools: tuple[str, ...], caps: Caps = Caps()) -> str | None:
    """The first tool the sandbox or the engine needs that is not installed, else None."""
    jail = ("bwrap",) if caps.readable is not None else () if caps.network else ("unshare",)
    orphan = ("setpriv",) if caps.die_with_parent else ()
    needed = ("prlimit", "nice", *jail, *orphan, *tools)
    return next((tool for tool in needed if shutil.which(tool) is None), None)


def prefix(caps: Caps, folder: Path | None = None) -> list[str]:
    """The command that the engine's own argv follows; ``folder``: the job folder (needed
    when the engine is confined to it)."""
    if caps.readable is not None:
        assert folder is not None, "a confined engine needs its job folder"
        found = confined(caps, folder)
    else:
        found = [] if caps.network else ["unshare", "--net", "--"]
    if caps.die_with_parent:
        found += ["setpriv", "--pdeathsig", "KILL", "--"]
    limits = []
    if caps.output_bytes:
        limits.append(f"--fsize={caps.output_bytes}")
    if caps.memory:
        limits.append(f"--as={caps.memory}")
    if caps.cpu_seconds:
        limits.append(f"--cpu={caps.cpu_seconds}")
    if limits:
        found += ["prlimit", *limits, "--"]
    return [*found, "nice", "-n", str(NICENESS)]


def confined(caps: Caps, folder: Path) -> list[str]:
    """bubblewrap's part: a mount namespace of /usr (and the usual links to it), the
    readable paths, the job folder, a new /tmp, /dev and /proc (its own process
    namespace: no other process's root or files through /proc); no network unless
    allowed; all capabilities dropped (bwrap's default); killed with its parent."""
    argv = ["bwrap", "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    argv += ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64"):
        top = Path("/") / name
        if top.is_symlink():
            argv += ["--symlink", os.readlink(top), str(top)]
        elif top.is_dir():
            argv += ["--ro-bind", str(top), str(top)]
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    for path in caps.readable or ():
        if Path(path).exists():
            argv += ["--ro-bind", path, path]
    argv += ["--bind", str(folder), str(folder), "--chdir", str(folder)]
    if not caps.network:
        argv.append("--unshare-net")
    return [*argv, "--"]


def job_readable() -> tuple[str, ...]:
    """What a job process reads besides its folder and /usr: this Python and its packages,
    Stowage's own code, the dynamic loader's cache, and fonts (text in an SVG)."""
    code = Path(__file__).resolve().parents[2]  # src/, or site-packages when installed
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    found = {str(code), *prefixes, *(os.path.realpath(p) for p in prefixes)}
    found.update(("/etc/ld.so.cache", "/etc/fonts", "/var/cache/fontconfig"))
    return tuple(sorted(found))


def job_jail(folder: Path) -> tuple[str, ...]:
    """The prefix of a job process that decodes uploaded images and PDFs: confined by
    bubblewrap to ``job_readable``, its own ``folder`` and no network; where bubblewrap
    cannot run here, ``network_jail`` (the caller says so)."""
    if not confining_works():
        return network_jail()
    return tuple(confined(Caps(readable=job_readable()), folder))


@functools.cache
@functools.cache  # a server's pools (a test's many) ask once: the host does not change
def confining_works() -> bool:
    """Whether a Python of this server starts confined as a job process is."""
    if shutil.which("bwrap") is None:
        return False
    with tempfile.TemporaryDirectory(prefix="stowage-confined-") as folder:
        argv = [*confined(Caps(readable=job_readable()), Path(folder)), sys.executable]
        tried = subprocess.run(
            [*argv, "-c", "import stowage"],
            capture_output=True,
            check=False,
            env=job_environment(Path(folder)),
        )
    return tried.returncode == 0


#: A job has one core's share: numpy's OpenBLAS started a thread per core at import (and
#: OpenCV's pool followed it), idle in every job process of a many-core machine.
ONE_CORE = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


#: glibc's malloc in a job process. Few arenas: each reserves 64 MiB of address space per
#: libvips thread, which counts against the job's limit without being used. Fixed
#: thresholds: a job's buffers (a decoded thumbnail, libjpeg's and libwebp's work areas,
#: a few MiB) stay in the heap between jobs instead of being unmapped after each and
#: faulted in again, some 400 page faults and 0.8 ms of CPU per 12 MP thumbnail
#: (docs/decisions.md, "Job processes keep their malloc heap").
#: An operator's own GLIBC_TUNABLES are kept instead.
JOB_TUNABLES = "glibc.malloc.mmap_threshold=4194304:glibc.malloc.trim_threshold=8388608"


def job_heap() -> dict[str, str]:
    """glibc's settings for a job process's heap (``JOB_TUNABLES``, or the operator's)."""
    tunables = os.environ.get("GLIBC_TUNABLES", JOB_TUNABLES)
    return {"GLIBC_TUNABLES": tunables, "MALLOC_ARENA_MAX": "2"}


def job_environment(folder: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """A job process's whole environment: nothing of the server's (its credentials) but
    what Python and libvips read; HOME and TMPDIR in its folder."""
    kept = {k: v for k, v in os.environ.items() if k.startswith(("PYTHON", "VIPS_"))}
    return {
        **kept,
        **ONE_CORE,
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LC_ALL": "C.UTF-8",
        "HOME": str(folder / JOB_HOME),
        "TMPDIR": str(folder),
        **(extra or {}),
    }


@functools.cache
def network_jail() -> tuple[str, ...]:
    """The prefix that starts a program in a network namespace of its own (only a loopback
    that is down), for the job processes that decode images and PDFs; empty where this
    process may not make one (not root, no ``CAP_SYS_ADMIN``): the caller says so."""
    if shutil.which("unshare") is None:
        return ()
    tried = subprocess.run(["unshare", "--net", "--", "true"], capture_output=True, check=False)
    return ("unshare", "--net", "--") if tried.returncode == 0 else ()


def environment(folder: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The engine's whole environment: PATH, the C locale, HOME and TMPDIR in the job
    folder (created here)."""
    home = folder / "home"
    tmp = folder / "tmp"
    home.mkdir(parents=True, exist_ok=True)
    tmp.mkdir(parents=True, exist_ok=True)
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LC_ALL": "C.UTF-8",
        "HOME": str(home),
        "TMPDIR": str(tmp),
        **(extra or {}),
    }


def spawn_options(folder: Path, extra_env: dict[str, str] | None = None) -> dict[str, Any]:
    """Keyword arguments of ``asyncio.create_subprocess_exec``/``subprocess.Popen``."""
    return {
        "cwd": folder,
        "env": environment(folder, extra_env),
        "start_new_session": True,
    }


def kill_group(pid: int) -> None:
    """Kills the engine's session: the engine and every process it started."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def spawn(*argv: str, **options: Any) -> asyncio.subprocess.Process:
    """``asyncio.create_subprocess_exec``, safe to cancel: the process is always started
    to the end, and when the caller was cancelled meanwhile, its session is killed and
    waited for before the cancellation goes on.

    asyncio's own clean-up (Python 3.11) kills only the first process, then waits for
    every pipe to close; pipes not yet connected never count as closed, and a sandbox's
    other processes (bwrap's child, LibreOffice) keep theirs open. A LibreOffice
    converter cancelled while it started hung the server's close for ever and stayed
    running (tests/processing/test_sandbox.py)."""
    started = asyncio.ensure_future(asyncio.create_subprocess_exec(*argv, **options))
    try:
        return await asyncio.shield(started)
    except asyncio.CancelledError:
        await _ended(started)
        raise


async def _ended(started: asyncio.Future[asyncio.subprocess.Process]) -> None:
    try:
        proc = await started
    except Exception:
        return  # it did not start
    await reap(proc)


async def reap(proc: asyncio.subprocess.Process, grace: float = 5.0) -> bool:
    """Kills the process and its session, waits for it and closes its pipes; False when
    that did not end within ``grace`` seconds (the kill was sent all the same).

    Waiting alone is not enough: the process's transport closes only once each pipe has
    seen its end, which for stdin comes a turn of the loop later. A loop closed before
    that (a request's, a test's) left the transport to the garbage collector, which
    closed it on a closed loop ("Event loop is closed", tests/processing/test_sandbox.py).
    ``grace`` bounds the wait for pipes a stray process might still hold."""
    kill_group(proc.pid)  # a session of its own: everything it started
    with contextlib.suppress(ProcessLookupError):
        proc.kill()  # no session of its own: the process alone
    if proc.stdin is not None:
        proc.stdin.close()
    ends = [proc.wait(), *(_eof(r) for r in (proc.stdout, proc.stderr) if r is not None)]
    if proc.stdin is not None:
        ends.append(_closed(proc.stdin))
    try:
        async with asyncio.timeout(grace):
            await asyncio.gather(*ends)
    except TimeoutError:
        return False
    return True


async def _eof(reader: asyncio.StreamReader) -> None:
    with contextlib.suppress(Exception):  # already failed: nothing more to read
        while await reader.read(65536):
            pass  # a killed process's leftovers: at most a pipe's buffer


async def _closed(writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError):
        await writer.wait_closed()
