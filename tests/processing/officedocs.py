"""Office documents generated in Python for the tests (OOXML and OpenDocument are zips
of XML): text paragraphs, a slide per title, and hostile forms (an image linked from a
URL, a corrupt zip)."""

from __future__ import annotations

import io
import zipfile
from xml.sax.saxutils import escape

_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PKG = "http://schemas.openxmlformats.org/package/2006/relationships"
_IMAGE_REL = _R + "/image"
_A = "http://schemas.openxmlformats.org/drawingml/2006/main"
_PIC = "http://schemas.openxmlformats.org/drawingml/2006/picture"
_WP = "http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"


def _zip(files: dict[str, str], stored_first: str | None = None) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as made:
        if stored_first is not None:  # OpenDocument's mimetype: first, not compressed
            made.writestr(stored_first, files.pop(stored_first), zipfile.ZIP_STORED)
        for name, text in files.items():
            made.writestr(name, text)
    return out.getvalue()


def docx(paragraphs: list[str], image_url: str | None = None, page_breaks: bool = False) -> bytes:
    """A Word document of ``paragraphs`` (each on a page of its own with
    ``page_breaks``); ``image_url``: a picture linked (not embedded) from that URL."""
    body = []
    for n, text in enumerate(paragraphs):
        brk = '<w:r><w:br w:type="page"/></w:r>' if page_breaks and n else ""
        body.append(f'<w:p>{brk}<w:r><w:t xml:space="preserve">{escape(text)}</w:t></w:r></w:p>')
    rels = ""
    if image_url is not None:
        body.append(f"<w:p><w:r>{_linked_picture()}</w:r></w:p>")
        rels = (
            f'<Relationship Id="rIdImg" Type="{_IMAGE_REL}" '
            f'Target="{escape(image_url)}" TargetMode="External"/>'
        )
    files = {
        "[Content_Types].xml": (
            '<?xml version="1.0" encoding="UTF-8"?>'
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" '
            'ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            '<Override PartName="/word/document.xml" ContentType="application/'
            'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'
        ),
        "_rels/.rels": (
            f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{_PKG}">'
            f'<Relationship Id="rId1" Type="{_R}/officeDocument" Target="word/document.xml"/>'
            "</Relationships>"
        ),
        "word/_rels/document.xml.rels": (
            f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{_PKG}">'
            f"{rels}</Relationships>"
        ),
        "word/document.xml": (
            f'<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="{_W}" '
            f'xmlns:r="{_R}" xmlns:wp="{_WP}" xmlns:a="{_A}" xmlns:pic="{_PIC}">'
            f"<w:body>{''.join(body)}</w:body></w:document>"
        ),
    }
    return _zip(files)


def _linked_picture() -> str:
    size = 'cx="914400" cy="914400"'
    return (
        f'<w:drawing><wp:inline><wp:extent {size}/><wp:docPr id="1" name="linked"/>'
        f'<a:graphic><a:graphicData uri="{_PIC}"><pic:pic>'
        '<pic:nvPicPr><pic:cNvPr id="1" name="linked"/><pic:cNvPicPr/></pic:nvPicPr>'
        '<pic:blipFill><a:blip r:link="rIdImg"/><a:stretch><a:fillRect/></a:stretch>'
        f'</pic:blipFill><pic:spPr><a:xfrm><a:off x="0" y="0"/><a:ext {size}/></a:xfrm>'
        '<a:prstGeom prst="rect"/></pic:spPr></pic:pic></a:graphicData></a:graphic>'
        "</wp:inline></w:drawing>"
    )


_ODF_NS = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
    'xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" '
    'xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" '
    'xmlns:xlink="http://www.w3.org/1999/xlink" office:version="1.2"'
)


def _odf(mimetype: str, body: str) -> bytes:
    manifest = (
        '<?xml version="1.0" encoding="UTF-8"?><manifest:manifest '
        'xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" '
        'manifest:version="1.2"><manifest:file-entry manifest:full-path="/" '
        f'manifest:media-type="{mimetype}"/><manifest:file-entry '
        'manifest:full-path="content.xml" manifest:media-type="text/xml"/>'
        "</manifest:manifest>"
    )
    content = (
        f'<?xml version="1.0" encoding="UTF-8"?><office:document-content {_ODF_NS}>'
        f"<office:body>{body}</office:body></office:document-content>"
    )
    files = {"mimetype": mimetype, "META-INF/manifest.xml": manifest, "content.xml": content}
    return _zip(files, stored_first="mimetype")


def odt(paragraphs: list[str], image_url: str | None = None) -> bytes:
    body = "".join(f"<text:p>{escape(p)}</text:p>" for p in paragraphs)
    if image_url is not None:
        body += (
            '<text:p><draw:frame svg:width="2cm" svg:height="2cm">'
            f'<draw:image xlink:href="{escape(image_url)}" xlink:type="simple" '
            'xlink:show="embed" xlink:actuate="onLoad"/></draw:frame></text:p>'
        )
    return _odf("application/vnd.oasis.opendocument.text", f"<office:text>{body}</office:text>")


def odp(titles: list[str]) -> bytes:
    pages = "".join(
        f'<draw:page draw:name="s{n}"><draw:frame svg:x="2cm" svg:y="2cm" svg:width="20cm" '
        f'svg:height="3cm"><draw:text-box><text:p>{escape(t)}</text:p></draw:text-box>'
        "</draw:frame></draw:page>"
        for n, t in enumerate(titles)
    )
    mimetype = "application/vnd.oasis.opendocument.presentation"
    return _odf(mimetype, f"<office:presentation>{pages}</office:presentation>")


def html(paragraphs: list[str], image_url: str | None = None) -> bytes:
    body = "".join(f"<p>{escape(p)}</p>" for p in paragraphs)
    if image_url is not None:
        body += f'<p><img src="{escape(image_url)}" width="50" height="50"></p>'
        body += f'<link rel="stylesheet" href="{escape(image_url)}.css">'
    return f"<!DOCTYPE html><html><body>{body}</body></html>".encode()


def corrupt_docx() -> bytes:
    """A zip cut short: the start of a real document, no central directory."""
    return docx(["a paragraph"] * 50)[:300]
