"""A run's journal: one JSON line per file done, appended and flushed as each is done. A
second run (after a kill, ``kill -9`` included) with ``--trust-journal`` skips them without
asking the old side; without it, the journal is the runs' record for the operator.

The registry stays the truth: a journal line only saves the question "is the stored file
the old one?" when the stored row has the size and SHA-256 the line recorded. A line cut
short by a kill is ignored; a lost journal costs requests, never a second copy.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO


@dataclass(frozen=True)
class Done:
    size: int
    sha256: str


class Journal:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.done: dict[str, Done] = {}
        self._out: IO[str] | None = None

    def open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists():
            for line in self.path.read_text(errors="replace").splitlines():
                self._load(line)
        self._out = self.path.open("a")

    def _load(self, line: str) -> None:
        try:
            row = json.loads(line)
            self.done[str(row["handle"])] = Done(int(row["size"]), str(row["sha256"]))
        except (ValueError, KeyError, TypeError):
            pass  # the torn last line of a killed run

    def record(self, handle: str, size: int, sha256: str) -> None:
        assert self._out is not None
        self.done[handle] = Done(size, sha256)
        self._out.write(json.dumps({"handle": handle, "size": size, "sha256": sha256}) + "\n")
        self._out.flush()  # in the kernel's hands: a kill -9 of this process loses nothing

    def close(self) -> None:
        if self._out is not None:
            self._out.flush()
            os.fsync(self._out.fileno())
            self._out.close()
            self._out = None
