"""``pdfinfo=colorinfo:true``: whether each page uses colour or only greys, judged on the
page drawn small (``DENSITY``, at most ``MAX_SIDE`` pixels a side) in the job process.

A pixel is coloured when its red, green and blue differ by more than ``SPREAD`` (of 255):
anti-aliased grey text and the noise of a grey JPEG stay below it, while a coloured line
of a point, drawn over a fraction of a pixel, still shows. The hosted service does not
document its answer: docs/decisions.md.
"""

from __future__ import annotations

from typing import Any

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
import pyvips

DENSITY = 36  # dots per inch: a letter page is 306 x 396 px
MAX_SIDE = 1024  # pixels: a huge page box is drawn no larger
SPREAD = 8


def pages(pdf: pdfium.PdfDocument, boxes: list[tuple[float, float]]) -> list[dict[str, Any]]:
    """Each page's number (from 1) and whether it has colour, in order."""
    return [
        {"page": number, "color": _has_colour(pdf, number, box)}
        for number, box in enumerate(boxes, start=1)
    ]


def _has_colour(pdf: pdfium.PdfDocument, number: int, box: tuple[float, float]) -> bool:
    scale = min(DENSITY / 72.0, MAX_SIDE / max(box[0], box[1], 1.0))
    width, height = (max(1, round(side * scale)) for side in box)
    page = pdf[number - 1]
    bitmap = pdfium.PdfBitmap.new_native(
        width, height, format=pdfium_c.FPDFBitmap_BGRx, rev_byteorder=True
    )
    try:
        bitmap.fill_rect((255, 255, 255, 255), 0, 0, width, height)
        flags = pdfium_c.FPDF_ANNOT | pdfium_c.FPDF_REVERSE_BYTE_ORDER
        pdfium_c.FPDF_RenderPageBitmap(bitmap, page, 0, 0, width, height, 0, flags)
        image = pyvips.Image.new_from_memory(bitmap.buffer, bitmap.stride // 4, height, 4, "uchar")
        red, green, blue = (
            image.extract_area(0, 0, width, height)[i].cast("short") for i in range(3)
        )
        spreads = (red - green).abs().bandjoin([(green - blue).abs(), (red - blue).abs()])
        return bool(spreads.max() > SPREAD)
    finally:
        page.close()
        bitmap.close()
