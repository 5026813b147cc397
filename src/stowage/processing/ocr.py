"""The ``ocr`` task: the text in an image, read by Tesseract 5 (Debian's
``tesseract-ocr``), answered as JSON in the hosted service's shape.

The image tasks before ``ocr`` run in libvips as for any chain; the result is flattened
onto white, made grey and written as a PNG of ours into a private folder, and only that
PNG reaches Tesseract. Tesseract never sees the client's bytes, so no decoder of its
own (nor its "list of images" input, a text file naming other files) is exposed.

Tesseract runs as a child of the job process under a sandbox prefix (``sandboxed``):
no network, an address-space, CPU-time and file-size limit, killed with its parent and
at the job's deadline.

The answer (docs/decisions.md, "OCR's answer"): ``document.text_areas`` (Tesseract's
blocks), each with its ``lines`` and their ``words``; every item has a ``bounding_box``
of four corners ``{x, y}`` clockwise from the top left, in the pixels of the image OCR
read, and its ``text``; ``text`` at the top is every line, one a line.
"""

from __future__ import annotations

import json
import math
import os
import resource
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyvips

from stowage import errors
from stowage.processing import composite, sandbox
from stowage.processing.base import Output, Task
from stowage.processing.table import Answer, Kind, TaskSpec

JSON = Output("json", "application/json", "json")
#: Tesseract's address space at most (the job's own limit, when lower, is kept).
MEMORY = 1 << 30
DEFAULT_SECONDS = 30.0  # outside a job (tests of the module alone)
_OUTPUT_BYTES = 1 << 20  # RLIMIT_FSIZE: Tesseract writes nothing but to its pipe
_TSV_COLUMNS = 12


def sandboxed(argv: list[str], seconds: float, memory: int) -> list[str]:
    """``argv`` behind the engines' sandbox (``sandbox.py``): no network, killed with the
    job process, address space, CPU seconds and file size limited."""
    caps = sandbox.Caps(
        memory=memory,
        output_bytes=_OUTPUT_BYTES,
        cpu_seconds=max(1, math.ceil(seconds)),
        die_with_parent=True,
    )
    return [*sandbox.prefix(caps), *argv]


def _memory() -> int:
    """The job's own address-space limit, when lower than ``MEMORY``, is kept."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return MEMORY if soft == resource.RLIM_INFINITY else min(MEMORY, soft)


def _seconds() -> float:
    limits = composite.job_limits()
    return limits.seconds if limits is not None else DEFAULT_SECONDS


def render_ocr(image: pyvips.Image, task: Task) -> str:
    """The chain's image read by Tesseract, as the hosted service's JSON."""
    with tempfile.TemporaryDirectory(prefix="stowage-ocr-") as folder:
        page = Path(folder) / "page.png"
        _grey(image).pngsave(str(page), compression=1)
        tsv = _tesseract(page, _seconds())
    return json.dumps(answer(parse_tsv(tsv)), separators=(",", ":"))


def _grey(image: pyvips.Image) -> pyvips.Image:
    if image.hasalpha():
        image = image.flatten(background=[255] * (image.bands - 1))
    if image.interpretation not in ("b-w", "grey16"):
        image = image.colourspace("b-w")
    return image[0].cast("uchar") if image.format != "uchar" else image[0]


def _tesseract(page: Path, seconds: float) -> str:
    absent = sandbox.missing(("tesseract",), sandbox.Caps(die_with_parent=True))
    if absent is not None:  # the node's fault, not the client's: a 5xx
        raise RuntimeError(f"{absent} is not installed on this node (Debian: tesseract-ocr)")
    argv = sandboxed(["tesseract", page.name, "stdout", "-l", "eng", "tsv"], seconds, _memory())
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "OMP_THREAD_LIMIT": "1"}
    try:
        done = subprocess.run(
            argv,
            cwd=page.parent,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=seconds,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise errors.ProcessingTimeout(seconds=seconds) from exc
    if done.returncode != 0:
        reason = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no reason"]
        raise errors.InvalidImage(f"OCR failed on the image: {reason[0][:200]}")
    return done.stdout.decode("utf-8", "replace")


@dataclass
class _Box:
    left: int
    top: int
    width: int
    height: int
    text: str = ""
    children: list[_Box] = field(default_factory=list)

    def corners(self) -> list[dict[str, int]]:
        right, bottom = self.left + self.width, self.top + self.height
        points = ((self.left, self.top), (right, self.top), (right, bottom), (self.left, bottom))
        return [{"x": x, "y": y} for x, y in points]


def parse_tsv(tsv: str) -> list[_Box]:
    """Tesseract's TSV rows (level 2 block, 4 line, 5 word) as blocks of lines of
    words; empty words, and lines and blocks left without words, are dropped."""
    blocks: list[_Box] = []
    for row in tsv.splitlines()[1:]:
        cells = row.split("\t")
        if len(cells) != _TSV_COLUMNS or not cells[0].isdigit():
            continue
        level = int(cells[0])
        left, top, width, height = (int(c) for c in cells[6:10])
        box = _Box(left, top, width, height, cells[11].strip())
        if level == 2:
            blocks.append(box)
        elif level == 4 and blocks:
            blocks[-1].children.append(box)
        elif level == 5 and blocks and blocks[-1].children and box.text:
            blocks[-1].children[-1].children.append(box)
    for block in blocks:
        block.children = [line for line in block.children if line.children]
    return [block for block in blocks if block.children]


def answer(blocks: list[_Box]) -> dict[str, Any]:
    areas = [_area(block) for block in blocks]
    text = "\n".join(line["text"] for area in areas for line in area["lines"])
    return {"document": {"text_areas": areas}, "text": text}


def _area(block: _Box) -> dict[str, Any]:
    lines = [_line(line) for line in block.children]
    text = "\n".join(line["text"] for line in lines)
    return {"bounding_box": block.corners(), "lines": lines, "text": text}


def _line(line: _Box) -> dict[str, Any]:
    words = [{"bounding_box": w.corners(), "text": w.text} for w in line.children]
    text = " ".join(w.text for w in line.children)
    return {"bounding_box": line.corners(), "text": text, "words": words}


TASKS: tuple[TaskSpec, ...] = (
    TaskSpec(
        "ocr",
        kind=Kind.ANSWER,
        answer=Answer(render_ocr, JSON),
        doc="the text in the image (Tesseract): areas, lines and words with their boxes, as JSON",
    ),
)
