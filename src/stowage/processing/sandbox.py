"""The sandbox an engine that opens untrusted files runs in (ffmpeg, LibreOffice).

An engine is started as ``prefix(...) + argv`` with ``spawn_options(...)``:

- ``unshare -n``: a network namespace of its own, with only a loopback that is down,
  so a document's remote image or link, or a media playlist's URL, reaches nothing
  (not even this host's 127.0.0.1);
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

import contextlib
import os
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NICENESS = 10


@dataclass(frozen=True)
class Caps:
    """What a sandboxed engine may use."""

    memory: int = 0  # RLIMIT_AS, bytes; 0: none
    output_bytes: int = 0  # RLIMIT_FSIZE, bytes; 0: none
    network: bool = False  # True only for a trusted engine that needs it (none today)


def missing(tools: tuple[str, ...], caps: Caps = Caps()) -> str | None:
    """The first tool the sandbox or the engine needs that is not installed, else None."""
    needed = ("prlimit", "nice", *(() if caps.network else ("unshare",)), *tools)
    return next((tool for tool in needed if shutil.which(tool) is None), None)


def prefix(caps: Caps) -> list[str]:
    """The command that the engine's own argv follows."""
    found = [] if caps.network else ["unshare", "--net", "--"]
    limits = []
    if caps.output_bytes:
        limits.append(f"--fsize={caps.output_bytes}")
    if caps.memory:
        limits.append(f"--as={caps.memory}")
    if limits:
        found += ["prlimit", *limits, "--"]
    return [*found, "nice", "-n", str(NICENESS)]


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
