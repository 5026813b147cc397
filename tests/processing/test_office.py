"""The warm LibreOffice converters (processing/office.py) for real: any text round-trips
through txt -> PDF (a PDF of at least one page whose text holds the words), formats are
chosen by type or name, and a converter killed at its deadline is replaced."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator
from pathlib import Path

import pypdfium2 as pdfium
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stowage import errors
from stowage.processing import officeformats, sandbox
from stowage.processing.office import Converters
from tests.processing import officedocs

needs_office = pytest.mark.skipif(shutil.which("soffice") is None, reason="no LibreOffice")
WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=12)


@pytest.fixture(scope="module")
def running(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[asyncio.AbstractEventLoop, Converters]]:
    loop = asyncio.new_event_loop()
    root = tmp_path_factory.mktemp("office")
    converters = Converters(root, 1, 30.0, sandbox.Caps(memory=4 << 30, output_bytes=64 << 20))
    yield loop, converters
    loop.run_until_complete(converters.close())
    loop.close()


@needs_office
@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    words=st.lists(WORDS, min_size=1, max_size=30),
    noise=st.text(max_size=200),
)
def test_any_text_becomes_a_pdf_that_holds_its_words(
    running: tuple[asyncio.AbstractEventLoop, Converters],
    tmp_path_factory: pytest.TempPathFactory,
    words: list[str],
    noise: str,
) -> None:
    loop, converters = running
    folder = tmp_path_factory.mktemp("text")
    source, dest = folder / "in.txt", folder / "out.pdf"
    # Any Unicode text around the words (controls, surrogates' replacements, RTL, ...).
    source.write_text(noise + "\n" + " ".join(words) + "\n" + noise, "utf-8", "replace")
    kind = officeformats.KINDS["txt"]
    loop.run_until_complete(converters.convert(source, kind, "pdf", dest))
    pdf = pdfium.PdfDocument(str(dest))
    try:
        assert len(pdf) >= 1
        text = "".join(pdf[n].get_textpage().get_text_range() for n in range(len(pdf)))
    finally:
        pdf.close()
    flat = "".join(text.split())
    assert "".join(words) in flat


@needs_office
def test_a_document_of_another_family_is_refused_and_the_converter_goes_on(
    running: tuple[asyncio.AbstractEventLoop, Converters], tmp_path: Path
) -> None:
    loop, converters = running
    source = tmp_path / "deck.odp"
    source.write_bytes(officedocs.odp(["one"]))
    sheet = officeformats.KINDS["xlsx"]  # the type says spreadsheet; the file is slides
    with pytest.raises(errors.InvalidDocument):
        loop.run_until_complete(converters.convert(source, sheet, "pdf", tmp_path / "o.pdf"))
    slides = officeformats.KINDS["odp"]
    loop.run_until_complete(converters.convert(source, slides, "pdf", tmp_path / "o.pdf"))
    assert (tmp_path / "o.pdf").read_bytes().startswith(b"%PDF-")


@pytest.mark.parametrize(
    ("mimetype", "name", "found"),
    [
        (officeformats._OOXML + "wordprocessingml.document", "x.bin", "docx"),
        ("application/octet-stream", "report.DOCX", "docx"),
        ("application/zip", "deck.pptx", "pptx"),
        ("text/plain", "table.csv", "csv"),
        ("text/plain", "notes", "txt"),
        ("text/html; charset=utf-8", "page.htm", "html"),
        ("image/jpeg", "photo.docx", None),  # an image named .docx stays an image
        ("application/pdf", "a.pdf", None),
        (None, "a.odt", "odt"),
    ],
)
def test_a_document_is_known_by_its_type_or_its_name(
    mimetype: str | None, name: str, found: str | None
) -> None:
    kind = officeformats.kind_of(mimetype, name)
    assert (kind.extension if kind else None) == found


def test_each_family_converts_to_its_own_formats_only() -> None:
    assert officeformats.target(officeformats.KINDS["docx"], "odt")[0] == "writer8"
    for kind, fmt in (("docx", "xlsx"), ("csv", "pptx"), ("pptx", "docx")):
        with pytest.raises(errors.UnsupportedConversion) as refused:
            officeformats.target(officeformats.KINDS[kind], fmt)
        assert refused.value.status == 400 and refused.value.details["formats"]
    with pytest.raises(errors.UnsupportedConversion):
        officeformats.target(None, "docx")
