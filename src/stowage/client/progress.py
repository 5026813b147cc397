"""One status line per upload/download: this file's bar and the overall bar."""

from __future__ import annotations

import sys
import time
from typing import TextIO

WIDTH = 20


def _bar(done: int, total: int) -> str:
    filled = WIDTH if total <= 0 else min(WIDTH, done * WIDTH // total)
    return "[" + "#" * filled + "." * (WIDTH - filled) + "]"


def human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


class Progress:
    """Tracks bytes of the current file and of all files; draws at most 10 times a second
    on a terminal, and one line per finished file otherwise."""

    def __init__(self, total: int, files: int, out: TextIO | None = None, enabled: bool = True):
        self.total, self.files, self.out = total, files, out or sys.stderr
        self.enabled = enabled
        self.tty = self.out.isatty()
        self.done_total = 0
        self.index = 0
        self.name, self.size, self.done = "", 0, 0
        self.started = time.monotonic()
        self._drawn = 0.0

    def begin(self, name: str, size: int) -> None:
        self.index += 1
        self.name, self.size, self.done = name, size, 0
        self.draw(force=True)

    def advance(self, n: int) -> None:
        self.done += n
        self.done_total += n
        self.draw()

    def skip(self, n: int) -> None:
        """Bytes already on the server (a resumed upload)."""
        self.advance(n)

    def end(self) -> None:
        self.draw(force=True)
        if self.enabled and self.tty:
            self.out.write("\n")
        elif self.enabled:
            self.out.write(self.line() + "\n")
        self.out.flush()

    def line(self) -> str:
        rate = self.done_total / max(time.monotonic() - self.started, 1e-6)
        pct = 100 if self.size <= 0 else self.done * 100 // self.size
        overall = 100 if self.total <= 0 else self.done_total * 100 // self.total
        return (
            f"{self.name[:30]:30} {_bar(self.done, self.size)} {pct:3d}% {human(self.done):>10}"
            f" | all {self.index}/{self.files} {_bar(self.done_total, self.total)} {overall:3d}%"
            f" {human(rate)}/s"
        )

    def draw(self, force: bool = False) -> None:
        if not (self.enabled and self.tty):
            return
        now = time.monotonic()
        if force or now - self._drawn >= 0.1:
            self._drawn = now
            self.out.write("\r" + self.line())
            self.out.flush()
