"""``pdfcreate``: stored images and PDFs in one new PDF, in the URL's order
(``/pdfcreate/[h1,h2,...]``; filestack-python's ``Filelink("[h1,h2]").pdfcreate()``).

Runs in the job process, like every engine that meets uploads (``worker.serve`` hands
it the job before libvips would): a PDF's pages are imported whole by PDFium (nothing
drawn, nothing fetched or run: see ``pdf.py``); an image is decoded by libvips within
the pixel limit and becomes one page the size of the image at its resolution (72 DPI
when it states none). Declared in the task table by ``pageimages`` (this module loads
PDFium and libvips: only the job process imports it). The sources are the ones the
service authorised and read (``Job.sources``, at most ``processing_max_sources``, their
bytes limited); the pages of the result at most ``MAX_PAGES``.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
import pyvips

from stowage import errors
from stowage.processing import frames, pdf, pillowformats, svg
from stowage.processing.base import Chain, Job, Rendered
from stowage.processing.pageimages import MAX_CREATED_PAGES as MAX_PAGES
from stowage.processing.pageimages import PDFCREATE as NAME

DEFAULT_DPI = 72.0


def applies(chain: Chain) -> bool:
    return any(task.name == NAME for task in chain.tasks)


def render(job: Job) -> Rendered:
    """The new document of the job's sources (or its one source), saved to ``job.dest``."""
    if len(job.chain.tasks) != 1:
        raise errors.InvalidParameter(f"{NAME} takes no other task", parameter=NAME)
    paths = [path for _, path in job.sources] or [job.source]
    made = pdfium.PdfDocument.new()
    try:
        for index, path in enumerate(paths):
            if pdf.is_pdf(path):
                _import(made, path)
                continue
            # An SVG is checked and rewritten first, as every SVG source is (svg.py); a
            # JPEG 2000, BMP or ICO file decoded first (pillowformats.py).
            beside = job.dest.with_name(f"{job.dest.name}.page{index}")
            with (
                pillowformats.decoded(path, beside, job.limits) as raster,
                svg.rewritten(raster, beside, job.limits) as drawable,
            ):
                _image_page(made, drawable, job)
            if len(made) > MAX_PAGES:
                raise errors.DocumentTooLarge(
                    f"the new PDF would have over {MAX_PAGES} pages", max_pages=MAX_PAGES
                )
        made.save(str(job.dest))
    finally:
        made.close()
    return Rendered(job.output)


def _import(made: pdfium.PdfDocument, path: Path) -> None:
    with pdf.document(path) as source:
        if len(made) + len(source) > MAX_PAGES:
            raise errors.DocumentTooLarge(
                f"the new PDF would have over {MAX_PAGES} pages", max_pages=MAX_PAGES
            )
        try:
            made.import_pages(source)
        except pdfium.PdfiumError as exc:
            raise errors.InvalidDocument(f"a PDF's pages cannot be imported: {exc}") from exc


def _image_page(made: pdfium.PdfDocument, path: Path, job: Job) -> None:
    """One page holding the image, as large as the image at its resolution."""
    frames.check_raster(path, rewritten=svg.is_rewritten(path))  # rasters, checked SVGs
    try:
        image = pyvips.Image.new_from_file(str(path), access="sequential", fail_on="error")
        if image.width * image.height > job.limits.max_input_pixels:
            raise errors.ImageTooLarge(
                f"an image has {image.width * image.height} pixels; at most "
                f"{job.limits.max_input_pixels}",
                max_pixels=job.limits.max_input_pixels,
            )
        dpi = image.xres * 25.4 if image.xres else DEFAULT_DPI
        dpi = dpi if 36 <= dpi <= 2400 else DEFAULT_DPI
        rgb = image.autorot()
        rgb = rgb if rgb.interpretation == "srgb" else rgb.colourspace("srgb")
        rgb = rgb.flatten(background=[255, 255, 255]) if rgb.hasalpha() else rgb
        rgb = rgb.cast("uchar")
        # PDFium reads blue, green, red and a pad byte, rows of width x 4 bytes.
        bgrx = rgb[2].bandjoin([rgb[1], rgb[0], 255]).cast("uchar")
        pixels = bgrx.write_to_memory()
        width, height = rgb.width, rgb.height
    except pyvips.Error as exc:
        raise errors.InvalidImage(f"an image cannot be read: {_reason(exc)}") from exc
    bitmap = pdfium.PdfBitmap.new_native(width, height, pdfium_c.FPDFBitmap_BGRx)
    if bitmap.stride != width * 4:
        bitmap.close()
        raise errors.InvalidImage("the image's rows cannot be handed to PDFium")
    ctypes.memmove(bitmap.buffer, bytes(pixels), len(pixels))
    points = (width * 72 / dpi, height * 72 / dpi)
    page = made.new_page(*points)
    picture = pdfium.PdfImage.new(made)
    try:
        picture.set_bitmap(bitmap)
        picture.set_matrix(pdfium.PdfMatrix(points[0], 0, 0, points[1], 0, 0))
        page.insert_obj(picture)
        page.gen_content()
    finally:
        page.close()
        bitmap.close()


def _reason(exc: pyvips.Error) -> str:
    return str(exc.message if hasattr(exc, "message") else exc).strip().splitlines()[0][:200]
