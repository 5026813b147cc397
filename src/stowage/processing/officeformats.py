"""Office and text documents: which files are read through LibreOffice, into which
formats each family converts, and LibreOffice's filter for each. Declarations only: the
converters (``office.py``) and the URL grammar read them without loading anything.

A document is of one family (text, spreadsheet, presentation), named by LibreOffice's
service; it converts to PDF and to the formats of its family that the SDK schema's
``output.format`` lists (``doc``, ``docx``, ``odt``, ``txt``, ``html`` for text;
``xls``, ``xlsx``, ``ods``, ``html`` for spreadsheets; ``ppt``, ``pptx``, ``odp`` for
presentations). To an image, it is converted to PDF first, whose page is then rendered.
"""

from __future__ import annotations

from dataclasses import dataclass

from stowage import errors
from stowage.processing.base import Output


@dataclass(frozen=True)
class Family:
    name: str
    service: str  # what LibreOffice's loaded document must support
    filters: dict[str, tuple[str, str]]  # target extension: (export filter, its options)


@dataclass(frozen=True)
class Kind:
    """An input format: its family and, where type detection could misread it, the
    filter it is loaded with."""

    extension: str
    family: Family
    load_filter: str = ""
    load_options: str = ""


TEXT = Family(
    "text",
    "com.sun.star.text.TextDocument",
    {
        "pdf": ("writer_pdf_Export", ""),
        "doc": ("MS Word 97", ""),
        "docx": ("MS Word 2007 XML", ""),
        "odt": ("writer8", ""),
        "txt": ("Text (encoded)", "UTF8"),
        "html": ("HTML (StarWriter)", ""),
    },
)
SHEET = Family(
    "spreadsheet",
    "com.sun.star.sheet.SpreadsheetDocument",
    {
        "pdf": ("calc_pdf_Export", ""),
        "xls": ("MS Excel 97", ""),
        "xlsx": ("Calc MS Excel 2007 XML", ""),
        "ods": ("calc8", ""),
        "html": ("HTML (StarCalc)", ""),
    },
)
SLIDES = Family(
    "presentation",
    "com.sun.star.presentation.PresentationDocument",
    {
        "pdf": ("impress_pdf_Export", ""),
        "ppt": ("MS PowerPoint 97", ""),
        "pptx": ("Impress MS PowerPoint 2007 XML", ""),
        "odp": ("impress8", ""),
    },
)
_CSV_OPTIONS = "44,34,76,1"  # comma-separated, double quotes, UTF-8, from line 1
KINDS = {
    kind.extension: kind
    for kind in (
        Kind("doc", TEXT),
        Kind("docx", TEXT),
        Kind("odt", TEXT),
        Kind("rtf", TEXT),
        Kind("txt", TEXT, "Text (encoded)", "UTF8"),
        Kind("html", TEXT, "HTML (StarWriter)"),
        Kind("xls", SHEET),
        Kind("xlsx", SHEET),
        Kind("ods", SHEET),
        Kind("csv", SHEET, "Text - txt - csv (StarCalc)", _CSV_OPTIONS),
        Kind("ppt", SLIDES),
        Kind("pptx", SLIDES),
        Kind("odp", SLIDES),
    )
}
_OOXML = "application/vnd.openxmlformats-officedocument."
MIMETYPES = {
    "application/msword": "doc",
    _OOXML + "wordprocessingml.document": "docx",
    "application/vnd.oasis.opendocument.text": "odt",
    "application/rtf": "rtf",
    "text/rtf": "rtf",
    "text/plain": "txt",
    "text/html": "html",
    "application/vnd.ms-excel": "xls",
    _OOXML + "spreadsheetml.sheet": "xlsx",
    "application/vnd.oasis.opendocument.spreadsheet": "ods",
    "text/csv": "csv",
    "application/vnd.ms-powerpoint": "ppt",
    _OOXML + "presentationml.presentation": "pptx",
    "application/vnd.oasis.opendocument.presentation": "odp",
}
_SPELLINGS = {"htm": "html", "text": "txt"}
#: Every ``output=format:`` that is a document, not an image.
TARGETS = ("pdf", "doc", "docx", "odt", "txt", "html", "xls", "xlsx", "ods", "ppt", "pptx", "odp")
OUTPUTS = {
    "pdf": Output("pdf", "application/pdf", "pdf"),
    **{
        ext: Output(ext, mimetype, ext)
        for mimetype, ext in MIMETYPES.items()
        if ext in TARGETS and ext != "pdf"
    },
    "txt": Output("txt", "text/plain; charset=utf-8", "txt"),
    "html": Output("html", "text/html; charset=utf-8", "html"),
}


def kind_of(mimetype: str | None, filename: str | None) -> Kind | None:
    """The Office or text format of a file, by its type, or by its name's extension when
    the type is a generic one (a zip, plain text, bytes); None: not one (an image, a PDF,
    anything else)."""
    plain = (mimetype or "").split(";")[0].strip().lower()
    name = filename or ""
    extension = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    by_name = KINDS.get(_SPELLINGS.get(extension, extension))
    if plain in _GENERIC or not plain:
        return by_name or (KINDS[MIMETYPES[plain]] if plain in MIMETYPES else None)
    return KINDS[MIMETYPES[plain]] if plain in MIMETYPES else None


_GENERIC = frozenset(
    {"application/octet-stream", "binary/octet-stream", "application/zip", "text/plain"}
)


def target(kind: Kind | None, fmt: str) -> tuple[str, str]:
    """The export filter and its options of ``fmt`` for a file of ``kind``; a 400 with
    ``UNSUPPORTED_CONVERSION`` for a pair that is not converted."""
    found = kind.family.filters.get(fmt) if kind is not None else None
    if kind is None or found is None:
        made = sorted(kind.family.filters) if kind is not None else []
        what = f"a {kind.family.name} document ({kind.extension})" if kind else "this file"
        raise errors.UnsupportedConversion(
            f"{what} cannot be converted to {fmt}"
            + (f"; it converts to {', '.join(made)} and to images" if made else ""),
            parameter="output.format",
            formats=made,
        )
    return found
