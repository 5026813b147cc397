"""The flat measure of a chain's result holds memory flat in the source's size
(processing/resultshare.py, resultcopy.py; the rule "streams, not buffers").

Before, on a 48 MP screenshot: the blocks measure of ``flop``'s result joined the
strips' own measures, each strip's buffers held at once (256-322 MiB); a chain that
reads out of order (``flip``) was measured on a second decode for random access, whole
(114 MiB for 40 MP, in memory or in a temporary file past libvips' disc threshold)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import pyvips

# The peak resident memory (VmHWM, reset first) the estimate grows by, its measure
# included: the job stops at its check, before its own decode.
_MEASURE = """
import sys
from pathlib import Path
from stowage.processing import chain, cost
from stowage.processing.base import Limits
from stowage.processing.vips import VipsEngine

def kib(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])

class Checked(Exception):
    pass

def check(seconds, limits):
    raise Checked

cost.check = check
parsed = chain.parse(sys.argv[2].split("/"))
output = chain.output_for(parsed, "image/png")
Path("/proc/self/clear_refs").write_text("5")
before = kib("VmRSS")
try:
    limits = Limits(10**9, 10**10, 20_000, 60, max_total_pixels=10**10)
    source, dest = Path(sys.argv[1]), Path(sys.argv[3])
    VipsEngine(threads_per_job=1).render(source, parsed, output, dest, limits)
except Checked:
    pass
print((kib("VmHWM") - before) // 1024)
"""
#: A 40 MP source is 114 MiB decoded; the measure's own strips, shrunk maps and copy stay
#: well under it.
BUDGET_MIB = 72


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 40 MP picture of flat blocks and thin lines, made by libvips as it is saved."""
    path = tmp_path_factory.mktemp("large") / "blocks.png"
    xy = pyvips.Image.xyz(7200, 5600)
    blocks = ((xy[0] // 700) * 3 + (xy[1] // 450) * 5) % 7 * 36
    lines = ((xy[1] % 23) == 0).ifthenelse(0, blocks)
    lines.bandjoin([blocks, 255 - lines]).cast("uchar").copy(interpretation="srgb").pngsave(
        str(path), compression=1
    )
    return path


@pytest.mark.parametrize(
    "segments",
    [
        "flop/output=format:png",  # in order: strips of one sequential decode
        "flip/output=format:webp",  # out of order: a bounded copy
        "rotate=deg:30/output=format:gif",  # a turn held in memory, on the copy
    ],
)
def test_the_measure_of_a_40_megapixel_result_holds_flat_memory(
    large: Path, tmp_path: Path, segments: str
) -> None:
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(large), segments, str(tmp_path / "o")],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        # a decode for random access held in memory, not in a temporary file past 100 MB
        # (the job's sandbox passes VIPS_ variables through): what it holds shows
        env={**os.environ, "VIPS_DISC_THRESHOLD": "2g"},
    )
    grown = int(out.stdout.strip().splitlines()[-1])
    print(f"{segments}: the estimate's peak RSS grew {grown} MiB")
    assert grown < BUDGET_MIB
