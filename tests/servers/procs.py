"""Processes of a server under test, read from /proc (Linux)."""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def parents() -> dict[int, int]:
    """Every process id and its parent's, in one pass over /proc."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        found[int(stat.parent.name)] = int(fields[1])
    return found


def children(pid: int, parent_of: dict[int, int] | None = None) -> list[int]:
    """The process ids whose parent is ``pid``: a server's forked workers."""
    parent_of = parents() if parent_of is None else parent_of
    return [child for child, parent in parent_of.items() if parent == pid]


def descendants(pid: int, parent_of: dict[int, int] | None = None) -> list[int]:
    """Children, their children, and so on (from one reading of /proc)."""
    parent_of = parents() if parent_of is None else parent_of
    found: list[int] = []
    todo = [pid]
    while todo:
        kids = children(todo.pop(), parent_of)
        found += kids
        todo += kids
    return found


def cpu_ticks(pid: int) -> int:
    """User + system CPU time of ``pid`` in clock ticks; 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12])


def minor_faults(pid: int) -> int:
    """Page faults ``pid`` served without reading the disk (minflt); 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int(fields[7])


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def tail(text: str | bytes | None, limit: int = 3000) -> str:
    """The end of a process's output, for a failure message."""
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    return (text or "")[-limit:].strip() or "(no output)"


def run_checked(argv: Sequence[str], what: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """``subprocess.run`` for a step that must succeed (``initdb``, a CLI call, a set-up
    script): its failure raises with the command's own stderr and stdout in the message,
    not only "returned non-zero exit status 1" (a clean machine's CI once lost 70 tests to
    one ``initdb`` failure whose output was swallowed)."""
    done = subprocess.run(list(argv), capture_output=True, text=True, check=False, **kwargs)
    if done.returncode != 0:
        raise RuntimeError(
            f"{what} failed with exit status {done.returncode}: {shlex.join(argv)}\n"
            f"--- its stderr ---\n{tail(done.stderr)}\n--- its stdout ---\n{tail(done.stdout)}"
        )
    return done
