"""Peak memory measured as a job process runs: a new Python process (``VmHWM`` from /proc
belongs to its own memory map, new at exec; ``getrusage``'s peak survives fork and exec,
so a child of a large pytest process would start at the parent's peak), with the job
processes' heap settings (``sandbox.JOB_TUNABLES``, two malloc arenas): without them one
machine measured 21 MiB more than another for the same work."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from stowage.processing import sandbox

#: Put before a measured script: ``peak_mib()``, the process' peak resident MiB so far.
PEAK = """
from pathlib import Path

def peak_mib():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
"""


def grown_mib(script: str, *args: str) -> int:
    """What ``PEAK + script`` prints last (a number of MiB), run as a job would be."""
    out = subprocess.run(
        [sys.executable, "-c", PEAK + script, *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env={**os.environ, **sandbox.ONE_CORE, **sandbox.job_heap()},
    )
    return int(out.stdout.strip().splitlines()[-1])


#: A chain rendered by the engine, its growth printed: ``source chain dest`` (the chain's
#: segments joined by ``/``), after the modules named in ``preload`` are imported.
_RENDER = """
import sys
from stowage.processing import chain
from stowage.processing.base import Limits
from stowage.processing.vips import VipsEngine
{preload}
before = peak_mib()
parsed = chain.parse(sys.argv[2].split("/"))
output = chain.output_for(parsed, "image/jpeg")
VipsEngine(threads_per_job=1).render(
    Path(sys.argv[1]), parsed, output, Path(sys.argv[3]), Limits(10**9, 10**10, 10_000, 120)
)
print(peak_mib() - before)
"""


def render_grown_mib(source: Path, segments: str, dest: Path, preload: str = "") -> int:
    """How much a job grows rendering ``segments`` of ``source`` into ``dest`` (a JPEG
    unless the chain says otherwise)."""
    script = _RENDER.format(preload=f"import {preload}" if preload else "")
    return grown_mib(script, str(source), segments, str(dest))
