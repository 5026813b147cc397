"""Starting and stopping the storage emulators of fx_gcs.py and fx_azure.py.

Each emulator runs as a child process on a free port of 127.0.0.1, with its
output in a log file; a server that does not come up raises (never skips),
and it is stopped by its process id.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from tests.servers.ports import wait_listening

REPO = Path(__file__).resolve().parents[2]


def start(
    name: str, argv: Sequence[str], port: int, log: Path, timeout: float = 30
) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        proc = subprocess.Popen(list(argv), stdout=out, stderr=subprocess.STDOUT, cwd=log.parent)
    try:
        wait_listening(port, proc, log, timeout, name)
    except BaseException:
        stop(proc)
        raise
    return proc


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def rss_peak_kib() -> int:
    """This process's peak resident set size so far (VmHWM), in KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status")
