"""``stowage`` with a crash point: when the file named by ``STOWAGE_TEST_CRASH_ARM`` exists,
the process kills itself (SIGKILL) as an object is published, at the point named by
``STOWAGE_TEST_CRASH_POINT``:

- ``after-rename`` (the default): the object was renamed into place, its directory not
  yet fsynced, the registry not yet updated: checklist 49's window, hit exactly rather
  than by timing;
- ``before-rename``: the new file is complete and fsynced in the temporary folder (an
  overwrite has recorded its intent), the rename not done.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from stowage.cli import main
from stowage.storage import local

_ARM = Path(os.environ["STOWAGE_TEST_CRASH_ARM"])
_POINT = os.environ.get("STOWAGE_TEST_CRASH_POINT", "after-rename")
_fsync_dir = local._fsync_dir
_publish = local._publish


def _crash_before_directory_fsync(path: Path) -> None:
    if _POINT == "after-rename" and _ARM.exists() and "objects" in path.parts:
        os.kill(os.getpid(), signal.SIGKILL)
    _fsync_dir(path)


def _crash_before_rename(temp: Path, target: Path) -> None:
    if _POINT == "before-rename" and _ARM.exists():
        os.kill(os.getpid(), signal.SIGKILL)
    _publish(temp, target)


local._fsync_dir = _crash_before_directory_fsync
local._publish = _crash_before_rename

if __name__ == "__main__":
    sys.exit(main())
