"""``doc_to_images``: each page of a document as an image (filestack-python's
``Filelink.doc_to_images(pages, engine, format, quality, density, hidden_slides)``); and
the declaration of ``pdfcreate`` (several stored files into one PDF), made by
``pdfcreate.py`` in the job process.

It answers JSON that lists, for each page asked for, the CDN URL of that page as an
image (``output=format:png,page:N,density:D/<HANDLE>``) and its size in pixels
(docs/decisions.md, "doc_to_images answers page URLs"). The page count and boxes come
from the document's ``pdfinfo`` (a derivative made in the job process, cached like any
other); each page image is rendered when its URL is first asked for, and cached then.
Nothing here reads the document: ``docpages.py`` does the reading through the engine,
and this module, which the grammar loads through the task table, only declares and
computes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stowage import errors
from stowage.processing.base import Task
from stowage.processing.documents import PDF, page_ranges, to_pixels
from stowage.processing.params import boolean, choice, integer, text
from stowage.processing.table import Answer, Kind, Param, TaskSpec

FORMATS = ("png", "jpg", "jpeg", "webp")
DEFAULT_DENSITY = 72  # as output=page: one pixel per point
NAME = "doc_to_images"
PDFCREATE = "pdfcreate"
MAX_CREATED_PAGES = 2000  # pages of a document pdfcreate makes


def _made_by_the_job(image: object, task: Task) -> str:
    """Never called: the job process hands pdfcreate to ``pdfcreate.py``, not libvips.
    The declared answer gives the result's type (``application/pdf``)."""
    raise errors.InvalidParameter(f"{PDFCREATE} takes no image task", parameter=PDFCREATE)


TASKS: tuple[TaskSpec, ...] = (
    TaskSpec(
        NAME,
        (
            Param("pages", page_ranges),
            Param("engine", text),  # the hosted service's choice of renderer: accepted
            Param("format", choice(*FORMATS)),
            Param("quality", integer(1, 100)),
            Param("density", integer(1, 500)),
            Param("hidden_slides", boolean),  # for presentations: accepted
        ),
        kind=Kind.ANSWER,
        doc="each page of a PDF as an image: JSON of the pages' image URLs and sizes",
    ),
    TaskSpec(
        PDFCREATE,
        (Param("engine", text),),  # the hosted service's choice of converter: accepted
        kind=Kind.ANSWER,
        answer=Answer(_made_by_the_job, PDF),
        doc="stored images and PDFs, in the URL's order, as one new PDF",
        reads_list=True,
    ),
)


def chosen(task: Task, count: int) -> list[int]:
    """The pages asked for (from 1), in the order given; all of them by default. A page
    past the end is a 400 naming it and the count."""
    ranges = task.get("pages")
    if not isinstance(ranges, tuple):
        return list(range(1, count + 1))
    found: list[int] = []
    for item in ranges:
        first, _, last = str(item).partition("-")
        start, end = int(first), int(last) if last else count
        if max(start, end) > count:
            raise errors.InvalidParameter(
                f"the document has {count} pages; there is no page {max(start, end)}",
                parameter=f"{NAME}.pages",
                pages=count,
            )
        found.extend(range(start, end + 1))
    return found


def _density(task: Task) -> int:
    found = task.get("density")
    return found if isinstance(found, int) else DEFAULT_DENSITY


def page_task(task: Task, number: int) -> str:
    """The ``output`` task that renders page ``number`` as ``doc_to_images`` asks."""
    fmt = str(task.get("format") or "png").replace("jpeg", "jpg")
    density = _density(task)
    quality = task.get("quality")
    tail = f",quality:{quality}" if quality is not None and fmt != "png" else ""
    return f"output=format:{fmt},page:{number},density:{density}{tail}"


def answer(
    task: Task, info: dict[str, Any], url_of: Callable[[str], str], max_side: int
) -> dict[str, Any]:
    """The JSON answer from the document's ``pdfinfo``: ``url_of(output task)`` is the
    URL of the page image the task renders. A page whose image would be past
    ``max_side`` is refused here, not listed with a URL that answers 422."""
    sizes = info.get("page_sizes") or []
    count = int(info.get("pages") or len(sizes))
    density = _density(task)
    fmt = str(task.get("format") or "png").replace("jpeg", "jpg")
    images = []
    for number in chosen(task, count):
        box = sizes[number - 1] if number <= len(sizes) else {"width": 0, "height": 0}
        width = to_pixels(float(box["width"]) * density / 72)
        height = to_pixels(float(box["height"]) * density / 72)
        if max(width, height) > max_side:
            raise errors.ImageTooLarge(
                f"page {number} at {density} dpi would be {width}x{height}; at most "
                f"{max_side} a side (a lower density fits it)",
                page=number,
            )
        url = url_of(page_task(task, number))
        images.append({"page": number, "url": url, "width": width, "height": height})
    return {"pages": count, "format": fmt, "density": density, "images": images}
