"""``stowage`` with a crash point: when the file named by ``STOWAGE_TEST_CRASH_ARM`` exists,
the process kills itself (SIGKILL) right after an object was renamed into place and before
its directory is fsynced: checklist 49's window, hit exactly rather than by timing."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from stowage.cli import main
from stowage.storage import local

_ARM = Path(os.environ["STOWAGE_TEST_CRASH_ARM"])
_fsync_dir = local._fsync_dir


def _crash_before_directory_fsync(path: Path) -> None:
    if _ARM.exists() and "objects" in path.parts:
        os.kill(os.getpid(), signal.SIGKILL)
    _fsync_dir(path)


local._fsync_dir = _crash_before_directory_fsync

if __name__ == "__main__":
    sys.exit(main())
