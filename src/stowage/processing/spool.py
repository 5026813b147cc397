"""The spool: files of one node's derivatives while they are made or sent, in
``data_dir/tmp``, named so that a crashed process's leftovers can be told and swept."""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

SPOOL_PREFIX = "derivative-"
SPOOL_STALE_SECONDS = 3600.0


class Spool:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        sweep(folder)
        folder.mkdir(parents=True, exist_ok=True)

    def new(self, suffix: str) -> Path:
        """A new empty file of the spool; the caller removes it."""
        try:
            fd, name = tempfile.mkstemp(prefix=SPOOL_PREFIX, suffix=suffix, dir=self.folder)
        except FileNotFoundError:  # the folder was removed while the server ran
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(prefix=SPOOL_PREFIX, suffix=suffix, dir=self.folder)
        os.close(fd)
        return Path(name)

    @contextlib.contextmanager
    def held(self, suffix: str) -> Iterator[Path]:
        """A new file of the spool, removed when the block ends."""
        path = self.new(suffix)
        try:
            yield path
        finally:
            path.unlink(missing_ok=True)


def sweep(folder: Path) -> None:
    """Spool files a crashed process left. Only old ones: worker processes of one node
    share the folder, and another worker's job may be using a young one."""
    stale = time.time() - SPOOL_STALE_SECONDS
    for path in folder.glob(SPOOL_PREFIX + "*") if folder.is_dir() else []:
        with contextlib.suppress(OSError):
            if path.stat().st_mtime < stale:
                path.unlink()
