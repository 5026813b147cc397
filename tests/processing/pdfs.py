"""Small PDFs written by hand as bytes, for the document tests: well-formed ones with
coloured pages, and hostile ones (lies about the page count, huge page boxes, actions
and links to loopback and local files, endless drawing, truncated or garbage files)."""

from __future__ import annotations

import zlib
from collections.abc import Sequence

Colour = tuple[float, float, float]
RED: Colour = (1.0, 0.0, 0.0)
GREEN: Colour = (0.0, 1.0, 0.0)
BLUE: Colour = (0.0, 0.0, 1.0)


def document(objects: Sequence[bytes], root: int = 1) -> bytes:
    """A PDF of the given objects (numbered from 1), with a correct cross-reference
    table, so that PDFium reads it without repairing it."""
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\n" % (len(objects) + 1, root)
    out += b"startxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


def stream(data: bytes, extra: bytes = b"") -> bytes:
    return b"<< /Length %d %s>>\nstream\n" % (len(data), extra) + data + b"\nendstream"


def filled(colour: Colour, width: float, height: float) -> bytes:
    """Content filling the whole page with one colour."""
    r, g, b = colour
    return b"%.3f %.3f %.3f rg 0 0 %.2f %.2f re f" % (r, g, b, width, height)


def pages(
    boxes: Sequence[tuple[float, float]],
    contents: Sequence[bytes] | None = None,
    count: int | None = None,
    page_extra: bytes = b"",
    catalog_extra: bytes = b"",
    extra_objects: Sequence[bytes] = (),
) -> bytes:
    """A document with one page per box (width, height in points), each drawn with its
    content; ``count`` is what the page tree declares (a lie when it differs)."""
    n = len(boxes)
    contents = contents or [b""] * n
    objects: list[bytes] = [b"", b""]  # 1: catalog, 2: page tree (filled below)
    kids = []
    for (width, height), content in zip(boxes, contents, strict=True):
        page_number = len(objects) + 1
        kids.append(b"%d 0 R" % page_number)
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %.2f %.2f] /Contents %d 0 R %s>>"
            % (width, height, page_number + 1, page_extra)
        )
        objects.append(stream(content))
    objects[0] = b"<< /Type /Catalog /Pages 2 0 R %s>>" % catalog_extra
    declared = n if count is None else count
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(kids), declared)
    objects.extend(extra_objects)
    return document(objects)


LETTER = (612.0, 792.0)


def coloured(boxes: Sequence[tuple[float, float]], colours: Sequence[Colour]) -> bytes:
    """Pages each filled with its own colour."""
    return pages(boxes, [filled(c, w, h) for c, (w, h) in zip(colours, boxes, strict=True)])


def three_pages() -> bytes:
    """Page 1 red letter, page 2 green 300 x 200 pt, page 3 blue 400 x 400 pt."""
    return coloured([LETTER, (300.0, 200.0), (400.0, 400.0)], [RED, GREEN, BLUE])


def quadrants(width: float, height: float) -> bytes:
    """One page: left half red, right half blue, so orientation can be checked."""
    content = filled(RED, width / 2, height) + b"\n0 0 1 rg %.2f 0 %.2f %.2f re f" % (
        width / 2,
        width / 2,
        height,
    )
    return pages([(width, height)], [content])


def lying_count(declared: int = 100_000) -> bytes:
    """One real page in a page tree that says it has ``declared``."""
    return pages([LETTER], [filled(RED, *LETTER)], count=declared)


def many_pages(n: int) -> bytes:
    return pages([(72.0, 72.0)] * n)


def huge_box(inches: float = 200.0) -> bytes:
    side = inches * 72
    return pages([(side, side)], [filled(RED, side, side)])


def endless_drawing(repeats: int = 200_000) -> bytes:
    """A content stream of many overlapping full-page transparent fills with heavy
    blending: slow to draw whatever the resolution."""
    op = b"/G gs 0 0 612 792 re f\n"
    ext = b"/Resources << /ExtGState << /G 5 0 R >> >> "
    return pages(
        [LETTER],
        [b"0.5 0.2 0.9 rg\n" + op * repeats],
        page_extra=ext,
        extra_objects=[b"<< /Type /ExtGState /ca 0.5 /BM /Multiply >>"],
    )


def hostile_actions(port: int) -> bytes:
    """JavaScript on open, a launch action, links and an image XObject reference to a
    loopback URL and to /etc/passwd: nothing of it may be fetched or read."""
    url = b"http://127.0.0.1:%d/pdf-fetch" % port
    n = 5  # objects after the one page (3) and its content (4)
    annots = b"/Annots [%d 0 R %d 0 R %d 0 R] " % (n, n + 1, n + 2)
    link = b"<< /Type /Annot /Subtype /Link /Rect [0 0 300 300] /A << /S /URI /URI (%s) >> >>"
    extra = [
        link % url,
        link % b"file:///etc/passwd",
        b"<< /Type /Annot /Subtype /FileAttachment /Rect [300 300 400 400] "
        b"/FS << /Type /Filespec /F (/etc/passwd) /FS /URL /UF (%s) >> >>" % url,
        b"<< /S /JavaScript /JS (app.launchURL('%s'); this.submitForm('%s');) >>" % (url, url),
        b"<< /S /Launch /F (/bin/sh) /Win << /F (cmd.exe) >> >>",
        b"<< /Type /Filespec /FS /URL /F (%s) >>" % url,
    ]
    catalog = b"/OpenAction %d 0 R /AA << /WC %d 0 R >> " % (
        n + 3,
        n + 4,
    ) + b"/Names << /JavaScript << /Names [(x) %d 0 R] >> >> " % (n + 3)
    # An external stream: its data lives at a URL (PDF 1.2 /FFilter, /F with a URL spec).
    xobject = b"/Resources << /XObject << /Ext %d 0 R >> >> " % (n + 6)
    extra.append(
        b"<< /Type /XObject /Subtype /Image /Width 10 /Height 10 /ColorSpace /DeviceRGB "
        b"/BitsPerComponent 8 /Length 0 /F %d 0 R >>\nstream\n\nendstream" % (n + 5)
    )
    content = filled(RED, *LETTER) + b"\nq 100 0 0 100 0 0 cm /Ext Do Q"
    return pages(
        [LETTER],
        [content],
        page_extra=annots + xobject,
        catalog_extra=catalog,
        extra_objects=extra,
    )


def truncated() -> bytes:
    return three_pages()[:300]


def garbage() -> bytes:
    return b"%PDF-1.7\n" + bytes(range(256)) * 40


def slow_to_draw(curves: int = 300_000, side: float = 600.0) -> bytes:
    """One page of ``curves`` filled curves, Flate-compressed: some 35 KB that PDFium
    takes seconds to draw (300,000: about 6 s at 100 px on the test machine)."""
    content = b"0 0 m %.0f y x %.0f 300 300 c 0 %.0f l h f\n" % (side, side, side) * curves
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %.0f %.0f] /Contents 4 0 R >>" % (side, side),
        stream(zlib.compress(content), b"/Filter /FlateDecode "),
    ]
    return document(objects)
