"""What the preview page of a stored file shows (``/preview/<HANDLE>``, issue 26): the
file as an image, as text, as a PDF (drawn by pdf.js in the browser), or a download link.
No HTTP here: ``http/preview.py`` renders the result into the page.

Which view comes from the file's row type (detected from the content when it was
stored). Text is read here, at most ``TEXT_BYTES`` of it, and handed over as text for
the page to escape: the browser never gets a stored file it could take for markup.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

from stowage.core import reading
from stowage.core.reading import Download

TEXT_BYTES = 256 * 1024
IMAGE = "image"
CONVERTED = "converted"  # an image type browsers do not show: through output=format:png
PDF = "pdf"
TEXT = "text"
FILE = "file"
#: Image types every current browser shows in an <img> (SVG there runs no script).
SHOWN_IMAGES = frozenset(
    {
        "image/jpeg",
        "image/png",
        "image/gif",
        "image/webp",
        "image/avif",
        "image/bmp",
        "image/x-icon",
        "image/vnd.microsoft.icon",
        "image/svg+xml",
    }
)
CONVERTIBLE_IMAGES = frozenset({"image/tiff", "image/heic", "image/heif"})
_TEXT_APPLICATIONS = frozenset(
    {
        "application/json",
        "application/xml",
        "application/javascript",
        "application/x-javascript",
        "application/ecmascript",
        "application/x-yaml",
        "application/yaml",
        "application/toml",
        "application/x-sh",
        "application/sql",
        "application/csv",
    }
)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@dataclass(frozen=True)
class View:
    kind: str  # IMAGE, CONVERTED, PDF, TEXT or FILE
    filename: str
    mimetype: str
    size: int
    text: str | None = None  # TEXT: the file's first TEXT_BYTES, decoded
    truncated: bool = False  # TEXT: the file goes on past what is shown


def kind_of(mimetype: str) -> str:
    base = mimetype.split(";", 1)[0].strip().lower()
    if base == "application/pdf":
        return PDF
    if base in SHOWN_IMAGES:
        return IMAGE
    if base in CONVERTIBLE_IMAGES:
        return CONVERTED
    if base.startswith("text/") or base in _TEXT_APPLICATIONS:
        return TEXT
    if base.endswith(("+json", "+xml")):
        return TEXT
    return FILE


async def view(plan: Download) -> View:
    """The view of the file ``plan`` (an authorised download) describes."""
    record = plan.record
    kind = kind_of(record.mimetype)
    if kind != TEXT:
        return View(kind, record.filename, record.mimetype, record.size)
    text, truncated = await _head_text(plan)
    return View(kind, record.filename, record.mimetype, record.size, text, truncated)


async def _head_text(plan: Download) -> tuple[str, bool]:
    """The file's first ``TEXT_BYTES`` as text: UTF-8 with replacement characters for
    what is not (a character cut at the end is dropped), control characters but tab
    and line ends replaced."""
    record = plan.record
    size = record.size

    def span(found: int) -> tuple[int, int]:
        return 0, min(found, TEXT_BYTES) - 1

    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    parts: list[str] = []
    read = 0
    chunks = reading.whole(plan.provider, record.container, record.key, span)
    try:
        async for chunk in chunks:
            taken = chunk[: TEXT_BYTES - read]
            read += len(taken)
            parts.append(decoder.decode(taken))
            if read >= TEXT_BYTES:
                break
    finally:
        await reading.close(chunks)
    text = "".join(parts).removeprefix("\ufeff")
    return _CONTROL.sub("\ufffd", text), size > read
