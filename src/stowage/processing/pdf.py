"""PDF sources in the job process, with PDFium (``pypdfium2``): the page asked for
rendered into a raster file that the image pipeline goes on from, ``pdfinfo``'s answer
and ``pdfconvert``'s new document.

Only the page asked for is loaded and drawn, at a size computed from its box and the
density and checked against the limits before a byte of bitmap is allocated: a
200-inch page at 500 DPI is refused in microseconds, not drawn into a 1-GB bitmap.
PDFium fetches nothing and runs no script here: this build has no JavaScript engine,
the form environment (where scripts and actions would run) is never initialised, and
links, launch actions and external streams are data it does not follow. A page whose
drawing never ends holds only its job process, which the pool kills at the deadline.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pypdfium2 as pdfium
import pypdfium2.internal as pdfium_internal
import pypdfium2.raw as pdfium_c
import pyvips

from stowage import errors
from stowage.processing import documents, pdfcolour
from stowage.processing.base import Chain, Limits, Output, Rendered, Task

MAGIC = b"%PDF-"
MAX_PAGES = 10_000  # documents with more pages are refused (the page option's range)
DEFAULT_DENSITY = 72  # dots per inch: one pixel per point
POINTS_PER_INCH = 72.0
PAPER = {  # width x height in points, portrait
    "a2": (1190.55, 1683.78),
    "a3": (841.89, 1190.55),
    "a4": (595.28, 841.89),
    "a5": (419.53, 595.28),
    "b4": (708.66, 1000.63),
    "b5": (498.9, 708.66),
    "letter": (612.0, 792.0),
    "legal": (612.0, 1008.0),
    "tabloid": (792.0, 1224.0),
}


@dataclass(frozen=True)
class Raster:
    """What the image pipeline renders from: the source itself, or a rendered page."""

    source: Path
    chain: Chain


def is_pdf(source: Path) -> bool:
    with source.open("rb") as handle:
        return handle.read(len(MAGIC)) == MAGIC


@contextlib.contextmanager
def opened(
    source: Path, chain: Chain, output: Output, dest: Path, limits: Limits
) -> Iterator[Raster | Rendered]:
    """The engine's hook where a source is opened: a source that is no PDF goes on as
    it is; a PDF is answered (``pdfinfo``, ``pdfconvert``) or its page is rendered into
    a raster file beside ``dest``, removed when the job is done."""
    asked = documents.output_of(chain)
    if not is_pdf(source):
        if asked is not None and not documents.laid_out(chain.tasks[-1]):
            last = chain.tasks[-1].name
            raise errors.NotAPdf(f"{'docinfo' if last == 'output' else last} takes a document")
        yield Raster(source, chain)
        return
    if asked is not None:
        with _document(source) as pdf:
            yield _answer(pdf, chain.tasks[-1], output, dest)
        return
    if chain.wants_size and all(t.name in ("output", "imagesize") for t in chain.tasks):
        yield _page_size(source, chain, output, dest, limits)
        return
    raster = dest.with_name(dest.name + ".page.tif")
    try:
        page, density = _asked_page(chain)
        with _document(source) as pdf:
            _render_page(pdf, page, density, limits, raster, chain)
        yield Raster(raster, _without_page(chain))
    finally:
        raster.unlink(missing_ok=True)


def _page_size(source: Path, chain: Chain, output: Output, dest: Path, limits: Limits) -> Rendered:
    """``imagesize`` of a PDF's page (its ``output`` options choose the page and the
    density): the size from the page's box. A page can take longer to draw than the
    job's deadline; its box is read in microseconds."""
    page, density = _asked_page(chain)
    with _document(source) as pdf:
        width, height = pixels(page_box(pdf, page), density / POINTS_PER_INCH, limits)
    dest.write_text(json.dumps({"width": width, "height": height}))
    return Rendered(output, width, height)


@contextlib.contextmanager
def _document(source: Path) -> Iterator[pdfium.PdfDocument]:
    try:
        pdf = _load(source)
    except pdfium.PdfiumError as exc:
        raise errors.InvalidDocument(f"the PDF cannot be read: {_reason(exc)}") from exc
    try:
        if len(pdf) > MAX_PAGES:
            raise errors.DocumentTooLarge(
                f"the PDF has {len(pdf)} pages; at most {MAX_PAGES}", max_pages=MAX_PAGES
            )
        if len(pdf) == 0:
            raise errors.InvalidDocument("the PDF has no pages")
        yield pdf
    finally:
        pdf.close()


document = _document  # how pdfcreate opens the PDFs it merges: the same checks


def _asked_page(chain: Chain) -> tuple[int, int]:
    options: dict[str, Any] = {}
    for task in chain.tasks:
        if task.name == "output":
            options.update(task.options)
    return int(options.get("page") or 1), int(options.get("density") or DEFAULT_DENSITY)


def _without_page(chain: Chain) -> Chain:
    """The chain the raster goes through: its one page is the page asked for."""
    tasks = tuple(
        Task(t.name, tuple((k, v) for k, v in t.options if k not in ("page", "density")))
        if t.name == "output"
        else t
        for t in chain.tasks
    )
    return replace(chain, tasks=tasks)


def page_box(pdf: pdfium.PdfDocument, number: int) -> tuple[float, float]:
    """Width and height in points of page ``number`` (from 1), turned as it is shown."""
    if not 1 <= number <= len(pdf):
        raise errors.InvalidParameter(
            f"the PDF has {len(pdf)} pages; there is no page {number}",
            parameter="output.page",
            pages=len(pdf),
        )
    try:
        width, height = pdf.get_page_size(number - 1)
    except pdfium.PdfiumError as exc:
        raise errors.InvalidDocument(f"page {number} cannot be read: {_reason(exc)}") from exc
    return float(width), float(height)


def pixels(box: tuple[float, float], scale: float, limits: Limits) -> tuple[int, int]:
    """The page's size in pixels at ``scale`` pixels per point, refused past the
    limits."""
    width, height = (documents.to_pixels(side * scale) for side in box)
    limit = limits.max_output_dimension
    if width > limit or height > limit or width * height > limits.max_input_pixels:
        raise errors.ImageTooLarge(
            f"the page would be {width}x{height} pixels at {scale * POINTS_PER_INCH:g} DPI; "
            f"at most {limit} a side and {limits.max_input_pixels} pixels",
            max_pixels=limits.max_input_pixels,
        )
    return width, height


def drawn_scale(chain: Chain, box: tuple[float, float], density: int) -> float:
    """Pixels per point to draw at: the density's, or less when the first image task is
    a resize that needs less (drawing at the size asked for, as shrink-on-load does for
    a JPEG: a 300-px thumbnail of a page is drawn at 300 px, not at 72 DPI and then
    reduced). ``fit:max`` (never enlarges) depends on the drawn size: left as asked."""
    scale = density / POINTS_PER_INCH
    tasks = [t for t in chain.tasks if t.name not in ("output", "quality", "compress")]
    first = tasks[0] if tasks else None
    if first is None or first.name != "resize" or first.get("fit") == "max":
        return scale
    needs = [
        float(size) / side
        for size, side in ((first.get("width"), box[0]), (first.get("height"), box[1]))
        if isinstance(size, int)
    ]
    return min(scale, max(needs)) if needs else scale


def _render_page(
    pdf: pdfium.PdfDocument, number: int, density: int, limits: Limits, raster: Path, chain: Chain
) -> None:
    box = page_box(pdf, number)
    pixels(box, density / POINTS_PER_INCH, limits)  # what was asked is within the limits
    width, height = pixels(box, drawn_scale(chain, box, density), limits)
    page = pdf[number - 1]
    try:
        # Drawn into exactly width x height (rounded, not PDFium's rounding up), so that
        # the page's aspect survives a small size: the resize that follows finds it.
        bitmap = pdfium.PdfBitmap.new_native(
            width, height, format=pdfium_c.FPDFBitmap_BGRx, rev_byteorder=True
        )
        bitmap.fill_rect((255, 255, 255, 255), 0, 0, width, height)
        flags = pdfium_c.FPDF_ANNOT | pdfium_c.FPDF_REVERSE_BYTE_ORDER
        pdfium_c.FPDF_RenderPageBitmap(bitmap, page, 0, 0, width, height, 0, flags)
    finally:
        page.close()
    if bitmap.stride != width * 4:
        raise errors.InvalidDocument(f"page {number} was drawn with unexpected rows")
    image = pyvips.Image.new_from_memory(bitmap.buffer, width, height, 4, "uchar")
    dpmm = density / 25.4
    image = image.extract_band(0, n=3).copy(interpretation="srgb", xres=dpmm, yres=dpmm)
    image.tiffsave(str(raster), compression="none")
    bitmap.close()


def _answer(pdf: pdfium.PdfDocument, task: Task, output: Output, dest: Path) -> Rendered:
    if task.name == "pdfinfo" or (task.name == "output" and task.get("docinfo") is True):
        return write_info(pdf, dest, output, colours=task.get("colorinfo") is True)
    return convert(pdf, task, dest, output)


def info(pdf: pdfium.PdfDocument, colours: bool = False) -> dict[str, Any]:
    """``pdfinfo``: the page count and the first page's dimensions in points, as the
    hosted service answers, and every page's size (``page_sizes``, Stowage's); with
    ``colorinfo:true`` each page's use of colour (``pdfcolour.py``)."""
    sizes = [page_box(pdf, n) for n in range(1, len(pdf) + 1)]
    shown = [{"width": _points(w), "height": _points(h)} for w, h in sizes]
    found = {"pages": len(pdf), "dimensions": shown[0], "page_sizes": shown}
    return {**found, "colorinfo": pdfcolour.pages(pdf, sizes)} if colours else found


def write_info(
    pdf: pdfium.PdfDocument, dest: Path, output: Output, colours: bool = False
) -> Rendered:
    dest.write_text(json.dumps(info(pdf, colours)))
    return Rendered(output)


def pages(ranges: tuple[str, ...], count: int) -> list[int]:
    """Page numbers (from 1) of ``pdfconvert``'s checked ranges, in the order given;
    a page past the end is a 400 naming it."""
    chosen: list[int] = []
    for text in ranges:
        first, _, last = text.partition("-")
        start, end = int(first), int(last) if last else count
        if start > count or end > count:
            raise errors.InvalidParameter(
                f"the PDF has {count} pages; there is no page {max(start, end)}",
                parameter="pdfconvert.pages",
                pages=count,
            )
        chosen.extend(range(start, end + 1))
    return chosen


def convert(pdf: pdfium.PdfDocument, task: Task, dest: Path, output: Output) -> Rendered:
    """``pdfconvert`` (or ``output=format:pdf`` with a page format or orientation: every
    page): the chosen pages in a new document, turned to the orientation asked for and
    fitted (scaled, centred) on the paper size asked for."""
    ranges = task.get("pages")
    count = len(pdf)
    chosen = pages(tuple(str(r) for r in ranges), count) if isinstance(ranges, tuple) else []
    chosen = chosen or list(range(1, count + 1))
    orientation, paper = task.get("pageorientation"), task.get("pageformat")
    made = pdfium.PdfDocument.new()
    try:
        for number in chosen:
            box = page_box(pdf, number)
            target = _target(box, str(paper) if paper else None, _str(orientation))
            if paper is None:
                made.import_pages(pdf, [number - 1])
                _turn(made, len(made) - 1, box, target)
            else:
                _fitted(pdf, made, number, box, target)
        made.save(str(dest))
    finally:
        made.close()
    return Rendered(output)


def _str(value: object) -> str | None:
    return None if value is None else str(value)


def _target(
    box: tuple[float, float], paper: str | None, orientation: str | None
) -> tuple[float, float]:
    width, height = PAPER[paper] if paper else box
    landscape = orientation == "landscape" or (orientation is None and box[0] > box[1])
    if landscape != (width > height):
        width, height = height, width
    return width, height


def _turn(made: pdfium.PdfDocument, index: int, box: tuple[float, float], target: Any) -> None:
    """An imported page in the other orientation is turned a quarter (its /Rotate)."""
    if (box[0] > box[1]) != (target[0] > target[1]) and box[0] != box[1]:
        page = made[index]
        page.set_rotation((page.get_rotation() + 90) % 360)
        page.close()


def _fitted(
    pdf: pdfium.PdfDocument,
    made: pdfium.PdfDocument,
    number: int,
    box: tuple[float, float],
    target: tuple[float, float],
) -> None:
    """Page ``number`` drawn as a form on a new page of the target size, scaled to fit."""
    width, height = target
    scale = min(width / box[0], height / box[1])
    xobject = pdf.page_as_xobject(number - 1, made)
    placed = xobject.as_pageobject()
    matrix = pdfium.PdfMatrix().scale(scale, scale)
    placed.transform(matrix.translate((width - box[0] * scale) / 2, (height - box[1] * scale) / 2))
    page = made.new_page(width, height)
    page.insert_obj(placed)
    page.gen_content()
    page.close()


def _points(value: float) -> float | int:
    rounded = round(value, 2)
    return int(rounded) if rounded == int(rounded) else rounded


def _load(source: Path) -> pdfium.PdfDocument:
    """PDFium opens the path as it is given: pypdfium2 would resolve it first, turning a
    job's ``/proc/self/fd/N`` into the stored file's own path, which a confined job
    process cannot see (``jobfiles.py``)."""
    raw = pdfium_c.FPDF_LoadDocument(os.fsencode(source) + b"\0", None)
    if not raw:
        code = pdfium_c.FPDF_GetLastError()
        why = pdfium_internal.ErrorToStr.get(code, "Unknown error")
        raise pdfium.PdfiumError(f"Failed to load document (PDFium: {why}).", err_code=code)
    return pdfium.PdfDocument(raw)


def _reason(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
