"""Mimetype detection: magic numbers first, then the filename; and what counts as active."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stowage.core import filetypes as mt

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00"
GIF = b"GIF89a\x01\x00\x01\x00"
PDF = b"%PDF-1.7\n%\xe2\xe3"
WEBP = b"RIFF\x24\x00\x00\x00WEBPVP8 "
HTML = b"<!DOCTYPE html><html><body>x</body></html>"
SVG = b'<svg xmlns="http://www.w3.org/2000/svg"></svg>'


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (PNG, "image/png"),
        (JPEG, "image/jpeg"),
        (GIF, "image/gif"),
        (b"GIF87a....", "image/gif"),
        (PDF, "application/pdf"),
        (WEBP, "image/webp"),
        (b"RIFF\x24\x00\x00\x00WAVEfmt ", "audio/wav"),
        (HTML, "text/html"),
        (b"\xef\xbb\xbf  \r\n<HTML><head>", "text/html"),
        (b"<script>alert(1)</script>", "text/html"),
        (b"<iframe src=x>", "text/html"),
        (b"  <BODY onload=x>", "text/html"),
        (SVG, "image/svg+xml"),
        (b'<?xml version="1.0"?>\n<svg xmlns="x"/>', "image/svg+xml"),
        (b'<?xml version="1.0"?><note/>', "application/xml"),
        (b"\x00\x00\x00\x18ftypavif", "image/avif"),
        (b"\x00\x00\x00\x0cjP  \r\n\x87\n\x00\x00", "image/jp2"),
        (b"\xff\x4f\xff\x51\x00\x2f", "image/jp2"),
        (b"\xff\x0a\xfa\x7f", "image/jxl"),
        (b"\x00\x00\x00\x0cJXL \r\n\x87\n\x00\x00", "image/jxl"),
        (b"\x00\x00\x00\x18ftypisom", "video/mp4"),
        (b"PK\x03\x04\x14\x00", "application/zip"),
        (b"\x1f\x8b\x08\x00", "application/gzip"),
        (b"BM\x00\x00", "image/bmp"),
        (b"II*\x00\x08\x00", "image/tiff"),
        (b"\x00asm\x01\x00", "application/wasm"),
    ],
)
def test_sniff_recognises_magic(head: bytes, expected: str) -> None:
    assert mt.sniff(head) == expected


@pytest.mark.parametrize(
    "head",
    [b"", b"hello world", b"RIFF\x24\x00\x00\x00AVI ", b"\x89PN", b"GIF8", b"{}", b"<p>hi</p>"],
)
def test_sniff_returns_none_for_unknown_content(head: bytes) -> None:
    assert mt.sniff(head) is None


@given(st.binary(max_size=mt.SNIFF_BYTES))
@settings(max_examples=300, deadline=None)
def test_sniff_is_total_and_prefix_based(head: bytes) -> None:
    kind = mt.sniff(head)
    assert kind is None or "/" in kind
    assert mt.sniff(PNG + head) == "image/png"
    assert mt.sniff(PDF + head) == "application/pdf"


def test_explicit_parameter_wins() -> None:
    assert mt.choose(" Image/PNG ", "text/html", PNG, "a.html", "x/y") == "image/png"


def test_specific_declared_type_beats_content() -> None:
    assert mt.choose(None, "image/jpeg; charset=x", PNG, "a.gif", "x/y") == "image/jpeg"
    assert mt.choose("", "Text/Plain", PNG, "a.gif", "x/y") == "text/plain"


@pytest.mark.parametrize(
    "declared",
    [
        None,
        "",
        "application/octet-stream",
        "binary/octet-stream",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=xyz",
        "APPLICATION/OCTET-STREAM; q=1",
        "image/*",  # a range a client accepts, once stored as the file's type
        "*/*",
        "Image/*; q=0.8",
    ],
)
def test_generic_declared_type_falls_back_to_content(declared: str | None) -> None:
    assert mt.choose(None, declared, PNG, "a.gif", "x/y") == "image/png"
    if declared and "*" in declared:  # a range as the mimetype parameter says nothing either
        assert mt.choose(declared, None, PNG, "a.gif", "x/y") == "image/png"
    assert mt.choose(None, declared, HTML, "photo.png", "x/y") == "text/html"


def test_unknown_content_falls_back_to_the_name_then_the_fallback() -> None:
    assert mt.choose(None, None, b"plain words", "notes.pdf", "x/y") == "application/pdf"
    assert mt.choose(None, "application/octet-stream", b"", "a.png", "x/y") == "image/png"
    assert mt.choose(None, None, b"plain words", "noextension", "x/y") == "x/y"
    assert mt.choose(None, None, b"", "", "application/octet-stream") == (
        "application/octet-stream"
    )


def test_declared_image_that_is_html_is_labelled_as_what_it_is() -> None:
    # Checklist item 22: a declared image/png that is HTML or SVG must be served as an
    # attachment, so content a browser would run overrides a harmless-looking declaration.
    assert mt.choose(None, "image/png", HTML, "x.png", "x/y") == "text/html"
    assert mt.choose("image/png", None, SVG, "x.png", "x/y") == "image/svg+xml"
    assert mt.choose(None, "text/html", HTML, "x.png", "x/y") == "text/html"
    assert mt.is_active(mt.sniff(HTML) or "")
    assert mt.is_active(mt.sniff(SVG) or "")


@pytest.mark.parametrize(
    "kind",
    [
        "text/html",
        "TEXT/HTML; charset=utf-8",
        "image/svg+xml",
        "application/xhtml+xml",
        "application/atom+xml",
        "text/xml",
        "application/xml",
        "text/javascript",
        "application/javascript",
        "application/ecmascript",
    ],
)
def test_active_types(kind: str) -> None:
    assert mt.is_active(kind)


@pytest.mark.parametrize(
    "kind", ["image/png", "text/plain", "application/pdf", "application/json", "video/mp4", ""]
)
def test_passive_types(kind: str) -> None:
    assert not mt.is_active(kind)
