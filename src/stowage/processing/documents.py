"""Document tasks of the task table (``pdfinfo``, ``pdfconvert``) and what their
results are. Declarations only: the work is done by ``pdf`` in the job process, so the
URL grammar, which reads this table, never loads PDFium.

A PDF source given to image tasks (``output=format:png,page:2,density:150/resize=...``)
needs no task of its own: ``pdf`` renders the page asked for, and the image tasks go on
from it.
"""

from __future__ import annotations

import math
import re

from stowage import words
from stowage.processing.base import Chain, Output, Task, Value
from stowage.processing.params import boolean, choice, integer, spelled_number
from stowage.processing.table import Kind, Param, TaskSpec

PAGE_FORMATS = ("a2", "a3", "a4", "a5", "b4", "b5", "letter", "legal", "tabloid")
PDF = Output("pdf", "application/pdf", "pdf")
INFO = Output("json", "application/json", "json")
#: Any page number the schema's pattern allows: one past the PDF's end is the job's 400.
_RANGE = re.compile(r"([0-9]+)?(-)?([0-9]+)?")
MAX_RANGES = 256
MAX_PAGE = 10**12  # the pattern's digits: a page past the PDF's end is the job's 400


def page_ranges(value: Value) -> Value:
    """``pages``: page numbers and ranges, as the SDK schema allows them: ``[1,3]``,
    ``["1-3","5"]``, ``"2-"`` (to the end), ``"-2"`` (the first two). Kept as text
    ranges ``"first-last"`` (``last`` empty: to the end), read by ``pdf.pages``."""
    items = value if isinstance(value, tuple) else (value,)
    if not 1 <= len(items) <= MAX_RANGES:
        raise ValueError(f"must be 1 to {MAX_RANGES} page numbers or ranges")
    return tuple(_one_range(item) for item in items)


def _one_range(item: Value) -> str:
    number = spelled_number(item)
    if isinstance(number, int | float) and not isinstance(number, bool) and number >= 0:
        page = integer(1, MAX_PAGE)(number)  # 2.0, +2, 2e0: page 2; 1.5 too, half up
        return f"{page}-{page}"
    if isinstance(item, bool | tuple | float):
        raise ValueError('must be page numbers or ranges such as 1, "2-4", "5-", "-3"')
    match = _RANGE.fullmatch(words.trimmed(str(item)))
    if match is None or not (match.group(1) or match.group(3)):
        raise ValueError('must be page numbers or ranges such as 1, "2-4", "5-", "-3"')
    first, dash, last = match.groups()
    first = first or "1"
    last = last or ("" if dash else first)
    if int(first) < 1 or (last and int(last) < int(first)):
        raise ValueError(f"{item!r} is not a range of pages from 1")
    return f"{int(first)}-{int(last) if last else ''}"


TASKS: tuple[TaskSpec, ...] = (
    TaskSpec(
        "pdfinfo",
        (Param("colorinfo", boolean),),
        kind=Kind.ANSWER,
        doc="a PDF's page count and page sizes, as JSON",
    ),
    TaskSpec(
        "pdfconvert",
        (
            Param("pages", page_ranges),
            Param("pageorientation", choice("portrait", "landscape")),
            Param("pageformat", choice(*PAGE_FORMATS)),
            Param("metadata", boolean),
        ),
        kind=Kind.ANSWER,
        needs_one_of=("pages", "pageorientation", "pageformat"),
        doc="a new PDF of the chosen pages, turned or fitted to a paper size",
    ),
)
ANSWERS = {"pdfinfo": INFO, "pdfconvert": PDF}


def output_of(chain: Chain) -> Output | None:
    """The result of a chain ending in a document task, else None. ``output=docinfo:true``
    last in a chain answers as ``pdfinfo`` does (docs/decisions.md), and ``output`` to a
    PDF with a page format or orientation lays the pages out as ``pdfconvert`` does."""
    if not chain.tasks:
        return None
    last = chain.tasks[-1]
    if last.name == "output":
        if last.get("docinfo") is True:
            return INFO
        return PDF if laid_out(last) else None
    return ANSWERS.get(last.name)


def laid_out(task: Task) -> bool:
    """``output=format:pdf`` with ``pageformat`` or ``pageorientation``: a document's pages
    laid out again, as ``pdfconvert`` does (an image source ignores them)."""
    return task.get("format") == "pdf" and bool(
        task.get("pageformat") or task.get("pageorientation")
    )


def to_pixels(length: float) -> int:
    """A length in pixels, halves rounded up (at least 1). The tolerance absorbs the
    error of ``points * (density / 72)``: 153 pt at 92 DPI is 195.5 px, computed
    195.49999999999997, and must not round down where 195.5 rounds up."""
    return max(1, math.floor(length + 0.5 + 1e-9))
