"""Mimetype detection: content first (magic numbers), then the filename."""

from __future__ import annotations

import codecs
import mimetypes

from stowage.core import headersafe

SNIFF_BYTES = 512

_MAGIC: list[tuple[bytes, int, str]] = [
    (b"\x89PNG\r\n\x1a\n", 0, "image/png"),
    (b"\xff\xd8\xff", 0, "image/jpeg"),
    (b"GIF87a", 0, "image/gif"),
    (b"GIF89a", 0, "image/gif"),
    (b"%PDF-", 0, "application/pdf"),
    (b"BM", 0, "image/bmp"),
    (b"II*\x00", 0, "image/tiff"),
    (b"MM\x00*", 0, "image/tiff"),
    (b"\x00\x00\x01\x00", 0, "image/x-icon"),
    (b"PK\x03\x04", 0, "application/zip"),
    (b"\x1f\x8b", 0, "application/gzip"),
    (b"7z\xbc\xaf\x27\x1c", 0, "application/x-7z-compressed"),
    (b"Rar!\x1a\x07", 0, "application/vnd.rar"),
    (b"OggS", 0, "audio/ogg"),
    (b"fLaC", 0, "audio/flac"),
    (b"ID3", 0, "audio/mpeg"),
    (b"\x1aE\xdf\xa3", 0, "video/webm"),
    (b"wOFF", 0, "font/woff"),
    (b"wOF2", 0, "font/woff2"),
    (b"\x00asm", 0, "application/wasm"),
    # JPEG 2000: a JP2 file's signature box, a bare codestream's SOC and SIZ markers (.j2k,
    # .j2c, .jpc: no name says so to ``mimetypes``); JPEG XL: its codestream, its container.
    (b"\x00\x00\x00\x0cjP  \r\n\x87\n", 0, "image/jp2"),
    (b"\xff\x4f\xff\x51", 0, "image/jp2"),
    (b"\xff\x0a", 0, "image/jxl"),
    (b"\x00\x00\x00\x0cJXL \r\n\x87\n", 0, "image/jxl"),
]

_HTML_MARKERS = (b"<!doctype html", b"<html", b"<head", b"<body", b"<script", b"<iframe")

#: Types a browser would run or render as a document: never served inline by default.
ACTIVE_TYPES = frozenset(
    {
        "text/html",
        "application/xhtml+xml",
        "image/svg+xml",
        "text/xml",
        "application/xml",
        "text/javascript",
        "application/javascript",
        "application/x-javascript",
        "application/ecmascript",
        "text/ecmascript",
    }
)


def sniff(head: bytes) -> str | None:
    for magic, offset, kind in _MAGIC:
        if head[offset : offset + len(magic)] == magic:
            return kind
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return "audio/wav"
    if head[4:8] == b"ftyp":
        return _iso_media(head)
    return _sniff_text(head)


#: HEIF brands (ISO/IEC 23008-12): AVIF's; HEIC's (HEVC images and sequences); and the
#: generic ones, whose compatible brands say which of the two a file is.
_AVIF_BRANDS = frozenset({b"avif", b"avis"})
_HEIC_BRANDS = frozenset({b"heic", b"heix", b"heim", b"heis", b"hevc", b"hevx"})
_HEIF_BRANDS = frozenset({b"mif1", b"msf1"})


def _iso_media(head: bytes) -> str:
    """An ISO media file by its ``ftyp`` box: a HEIF image (an iPhone's HEIC photo was
    taken for an MP4 video), a QuickTime movie, or else MP4."""
    major, end = head[8:12], min(len(head), int.from_bytes(head[:4], "big"))
    brands = {major, *(head[at : at + 4] for at in range(16, end - 3, 4))}
    if major in _AVIF_BRANDS or (major in _HEIF_BRANDS and brands & _AVIF_BRANDS):
        return "image/avif"
    if major in _HEIC_BRANDS or (major in _HEIF_BRANDS and brands & _HEIC_BRANDS):
        return "image/heic"
    if major in _HEIF_BRANDS:
        return "image/heif"
    return "video/quicktime" if major == b"qt  " else "video/mp4"


def is_heif(head: bytes) -> bool:
    """An AVIF, HEIC or other HEIF image, by its ``ftyp`` box."""
    return head[4:8] == b"ftyp" and _iso_media(head).startswith("image/")


def _sniff_text(head: bytes) -> str | None:
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if text.startswith(_HTML_MARKERS):
        return "text/html"
    if text.startswith(b"<?xml") or text.startswith(b"<svg"):
        return "image/svg+xml" if b"<svg" in text else "application/xml"
    return None


def of_decoded(head: bytes) -> str:
    """The type of bytes decoded from base64 when their content names none: text, or
    bytes. The name and type the base64 came with were the text's, not theirs."""
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return "application/octet-stream"
    return "application/octet-stream" if b"\x00" in head else "text/plain"


def named_as(filename: str, mimetype: str) -> str:
    """``filename`` with the extension of ``mimetype`` in place of its own (``b64.txt``
    holding a PNG is ``b64.png``); a name without one gets it (``file.png``)."""
    kind = mimetype.split(";")[0].strip().lower()
    extension = mimetypes.guess_extension(kind, strict=False)
    subtype = kind.rpartition("/")[2]
    if extension is None and subtype.isalnum():
        extension = "." + subtype  # image/heic, image/avif: no entry in every table
    if extension is None:
        return filename
    stem = filename.rsplit(".", 1)[0] if "." in filename.strip(".") else filename
    return f"{stem or 'file'}{extension}"


def guess_from_name(filename: str) -> str | None:
    kind, _ = mimetypes.guess_type(filename, strict=False)
    return kind


GENERIC = frozenset(
    {"", "application/octet-stream", "application/x-www-form-urlencoded", "binary/octet-stream"}
)


def choose(
    explicit: str | None, declared: str | None, head: bytes, filename: str, fallback: str
) -> str:
    """The parameter wins; then a specific declared type; then content; then name.

    Except: content a browser would run (HTML, SVG, XML) is labelled as what it is, whatever
    was declared, so that it is always served as an attachment.
    """
    sniffed = sniff(head)
    chosen = _declared_or_guessed(explicit, declared, sniffed, filename, fallback)
    if sniffed is not None and is_active(sniffed) and not is_active(chosen):
        return sniffed
    return chosen


def _declared_or_guessed(
    explicit: str | None, declared: str | None, sniffed: str | None, filename: str, fallback: str
) -> str:
    if explicit and "*" not in explicit:
        return headersafe.media_type(explicit)
    if declared and not headersafe.is_media_type(declared):
        declared = None  # an upstream's malformed type says nothing; clients' are refused
    declared_clean = (declared or "").split(";")[0].strip().lower()
    # A range (image/*, */*) is what a client accepts, not what a file is: the content says.
    specific = "*" not in declared_clean and not declared_clean.startswith("multipart/")
    if declared_clean not in GENERIC and specific:
        return declared_clean
    return sniffed or guess_from_name(filename) or fallback


def is_active(mimetype: str) -> bool:
    base = mimetype.split(";")[0].strip().lower()
    return base in ACTIVE_TYPES or base.endswith("+xml")
