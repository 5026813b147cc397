"""Where a transformation meets the Office converters: a document converted to another
document format is LibreOffice's work alone; to an image (or ``pdfinfo``,
``pdfconvert``) it is converted to PDF first, and the job pool goes on from the PDF as
from any PDF (``pdf.py``: the page asked for, at the density asked for)."""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
from collections.abc import Callable
from pathlib import Path

from stowage import errors
from stowage.core import filetypes
from stowage.processing import documents, minify, officeformats
from stowage.processing.base import Chain, Job
from stowage.processing.office import Converters
from stowage.processing.officeformats import Kind
from stowage.processing.pool import JobPool


def converted_to(chain: Chain) -> str | None:
    """The document format the chain asks for (``output=format:docx``), when the result
    is that document itself (not a ``pdfconvert`` of it)."""
    fmt = chain.output_format
    if fmt in officeformats.TARGETS and documents.output_of(chain) is None:
        return fmt
    return None


async def run(
    converters: Converters,
    pool: JobPool,
    job: Job,
    kind: Kind | None,
    spool: Callable[[str], Path],
) -> bool:
    """``job`` done: by the converters, the pool, or both in turn. True when a job process
    wrote ``job.dest``: it synced the file (``jobfiles.settle``)."""
    if kind is not None and (_image_or_pdf(job.source) or _binary_text(job.source, kind)):
        kind = None  # its type or name said document; its content says otherwise
    fmt = converted_to(job.chain)
    if fmt is not None:
        _only_output(job.chain, fmt)
        if fmt == "pdf" and _sniffed(job.source) == "application/pdf":
            await asyncio.to_thread(shutil.copyfile, job.source, job.dest)  # as it is
            return False
        officeformats.target(kind, fmt)  # an unsupported pair: 400 before any work
        assert kind is not None
        await converters.convert(job.source, kind, fmt, job.dest)
        return False
    if kind is None or minify.applies(job.chain):  # minify_js/css read the text itself
        await pool.run(job)
        return True
    pdf = spool(".pdf")
    try:
        await converters.convert(job.source, kind, "pdf", pdf)
        await pool.run(dataclasses.replace(job, source=pdf))
    finally:
        pdf.unlink(missing_ok=True)
    return True


#: Sniffed types of content that is no document whatever its recorded type (magic
#: numbers long enough not to begin a text by chance: not BMP's "BM").
_NOT_DOCUMENTS = frozenset(
    {"image/png", "image/jpeg", "image/gif", "image/webp", "image/tiff", "image/avif"}
    | {"image/jp2", "image/jxl", "image/heic", "image/heif"}
    | {"application/pdf", "video/mp4", "video/quicktime"}
)


def _image_or_pdf(source: Path) -> bool:
    return _sniffed(source) in _NOT_DOCUMENTS


def _binary_text(source: Path, kind: Kind) -> bool:
    """A "text" (a raw body is recorded as text/plain) holding NUL bytes: an image of a
    format with no signature (TGA) was drawn as a page of text by LibreOffice."""
    if kind.extension not in _TEXTS:
        return False
    with source.open("rb") as handle:
        head = handle.read(8192)
    return b"\x00" in head and not head.startswith((b"\xff\xfe", b"\xfe\xff"))  # UTF-16


_TEXTS = frozenset({"txt", "csv", "html"})


def _sniffed(source: Path) -> str | None:
    with source.open("rb") as handle:
        return filetypes.sniff(handle.read(64))


def _only_output(chain: Chain, fmt: str) -> None:
    others = [t.name for t in chain.tasks if t.name != "output"]
    if others:
        raise errors.UnsupportedConversion(
            f"a conversion to {fmt} takes no other task ({', '.join(others)})",
            parameter="output.format",
        )
