"""Raster images inside an SVG (``data:`` URLs), held to the job's pixel limits.

The engine checks an SVG's canvas from its header, but librsvg decodes every embedded
raster whole, at its own size, whatever size it is drawn at: a 187 KB SVG of 100x100
holding a 12000x12000 PNG of one colour was decoded (144 megapixels, 1.27 GB in the job
process) and answered 200 as a small job; at 16000x16000 librsvg dropped the image and
answered 200 with the wrong picture. Each ``data:`` image the rewrite keeps
(``svg.check_reference``) is therefore read here from its header, as the SVG is read:

- its size (and frames, for an animated GIF or WebP) from the decoded bytes' header,
  by content (``core.imagesize``): one that is no PNG, JPEG, GIF or WebP, or not the
  format its label says (librsvg draws a PNG labelled ``image/jpeg`` as nothing), or
  whose header cannot be read, is refused rather than silently left out;
- one image over ``max_input_pixels``, frames over ``max_frames``, or all of them over
  ``max_total_pixels`` (``check_canvas``: with the canvas) is ``ImageTooLarge``;
- their pixels are counted for the cost estimate (``decoded``): many mid-size images
  make a big job, or a refused one.

Every reference is counted, a repeated one too (librsvg caches a URL's image, but the
count may not rely on it), up to ``MAX_IMAGES``.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter
from dataclasses import dataclass, field

from stowage import errors
from stowage.core import imagesize
from stowage.processing.base import Limits

#: Embedded images an SVG may hold. Reading each header costs microseconds and librsvg
#: draws a tiny one in 0.02 ms (20,000 8x8 PNGs in 0.33 s), so the cap bounds the work of
#: reading a document of tiny images, not the drawing; icons and diagrams hold a few.
MAX_IMAGES = 1000
#: What ``data:image/<label>`` may say, as the format its bytes must be.
LABELS = {"png": "png", "jpeg": "jpeg", "jpg": "jpeg", "gif": "gif", "webp": "webp"}
#: libvips' loader of each format: the cost estimate's decode rate (``cost.DECODES``).
LOADERS = {"png": "pngload", "jpeg": "jpegload", "gif": "gifload", "webp": "webpload"}
_LABEL = re.compile(r"\s*data:image/([a-z]+)", re.I | re.ASCII)
_PERCENT = re.compile(rb"%([0-9A-Fa-f]{2})")
_BASE64 = re.compile(rb"[A-Za-z0-9+/]*")
_SPACE = re.compile(rb"[\t\n\f\r ]+")
_BASE64_LABEL = re.compile(r";[ ]*base64[ ]*$", re.I | re.ASCII)


class Refused(Exception):
    """The SVG names something outside itself, or is too big: the job answers a 422."""


@dataclass(frozen=True)
class Found:
    """One embedded image, as its header says."""

    format: str  # png, jpeg, gif, webp
    width: int
    height: int
    frames: int = 1
    frame_pixels: int = 0  # the largest frame's (a GIF frame may outgrow its screen)

    @property
    def pixels(self) -> int:
        return self.frames * self.frame_pixels


@dataclass
class Embedded:
    """The ``data:`` images of one SVG, checked as they are read."""

    max_input_pixels: float = math.inf
    max_total_pixels: float = math.inf
    max_frames: float = math.inf
    count: int = 0
    decoded: Counter[str] = field(default_factory=Counter)  # pixels, by libvips' loader

    @classmethod
    def within(cls, limits: Limits) -> Embedded:
        return cls(limits.max_input_pixels, limits.max_total_pixels, limits.max_frames)

    @property
    def pixels(self) -> int:
        return sum(self.decoded.values())

    def add(self, url: str, where: str) -> None:
        """``url`` (a ``data:image/...`` reference) read and counted; ``Refused`` when it
        cannot be read, ``ImageTooLarge`` past a limit."""
        self.count += 1
        if self.count > MAX_IMAGES:
            raise Refused(f"more than {MAX_IMAGES} data: images")
        try:
            found = read(url)
        except ValueError as exc:
            raise Refused(f"{where} holds a data: image that cannot be drawn: {exc}") from None
        shown = f"{where} holds a {found.width}x{found.height} {found.format.upper()}"
        if found.frames > self.max_frames:
            raise errors.ImageTooLarge(
                f"{shown} of {found.frames} frames; at most {self.max_frames:.0f}",
                max_frames=int(self.max_frames),
            )
        if found.frame_pixels > self.max_input_pixels:
            raise errors.ImageTooLarge(
                f"{shown}: {found.frame_pixels} pixels; at most {self.max_input_pixels:.0f}",
                max_pixels=int(self.max_input_pixels),
            )
        self.decoded[LOADERS[found.format]] += found.pixels
        self.check_canvas(0)

    def check_canvas(self, canvas: int) -> None:
        """The canvas's pixels (0 before it is known) and the images', held to the total."""
        total = canvas + self.pixels
        if total > self.max_total_pixels:
            what = "canvas and data: images" if canvas else "data: images"
            most = f"{self.max_total_pixels:.0f}"
            raise errors.ImageTooLarge(
                f"the SVG's {what} have {total} pixels in all; at most {most}",
                max_total_pixels=int(self.max_total_pixels),
            )


def read(url: str) -> Found:
    """The embedded image's format, size and frames; ``ValueError`` saying why not."""
    label = _LABEL.match(url)
    if label is None or label.group(1).lower() not in LABELS:
        raise ValueError("not a data: PNG, JPEG, GIF or WebP")
    data = payload(url)
    kind = _sniff(data)
    if kind is None:
        raise ValueError("no PNG, JPEG, GIF or WebP header")
    if kind != LABELS[label.group(1).lower()]:
        raise ValueError(f"a {kind.upper()} labelled image/{label.group(1).lower()}")
    size = imagesize.read_here(data)
    if size is None:
        raise ValueError(f"its {kind.upper()} header cannot be read")
    frames, largest = _frames(kind, data)
    return Found(kind, size[0], size[1], frames, max(size[0] * size[1], largest))


def payload(url: str) -> bytes:
    """The bytes of a data: URL, as a URL parser reads them (WHATWG's "data: URL
    processor"): percent-decoded, then base64-decoded forgivingly (spaces removed, the
    padding optional) when the media type ends in ``;base64``; a fragment dropped."""
    head, comma, body = url.strip().partition(",")
    if not comma:
        raise ValueError("no ',' before the data")
    raw = _PERCENT.sub(lambda m: bytes([int(m.group(1), 16)]), body.split("#", 1)[0].encode())
    if not _BASE64_LABEL.search(head):
        return raw
    text = _SPACE.sub(b"", raw)
    if len(text) % 4 == 0:
        text = text.removesuffix(b"=").removesuffix(b"=")
    if len(text) % 4 == 1 or not _BASE64.fullmatch(text):
        raise ValueError("its base64 is not well-formed")
    try:
        return base64.b64decode(text + b"=" * (-len(text) % 4), validate=True)
    except binascii.Error:
        raise ValueError("its base64 is not well-formed") from None


def _sniff(data: bytes) -> str | None:
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if data.startswith(b"\xff\xd8"):
        return "jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    return None


def _frames(kind: str, data: bytes) -> tuple[int, int]:
    """Frames a decoder of the whole animation goes through, and the largest frame's
    pixels (0: none larger than the header's size)."""
    if kind == "gif":
        return _gif_frames(data)
    if kind == "webp":
        return _webp_frames(data), 0
    return 1, 0  # PNG: the default image (an APNG's frames are not drawn); JPEG: one


def _gif_frames(data: bytes) -> tuple[int, int]:
    """A GIF's image descriptors, walked block by block as a decoder does (it stops at
    the trailer, or where the file is cut or damaged)."""
    frames, largest, at = 0, 0, 13 + _table(data[10])
    try:
        while at < len(data) and data[at] != 0x3B:
            if data[at] == 0x21:  # an extension: its label, then sub-blocks
                at = _past_blocks(data, at + 2)
            elif data[at] == 0x2C:  # an image: its rectangle, colour table, LZW data
                width, height = _le(data, at + 5), _le(data, at + 7)
                largest = max(largest, width * height)
                at = _past_blocks(data, at + 11 + _table(data[at + 9]))
                frames += 1
            else:
                break
    except IndexError:
        pass
    return max(frames, 1), largest


def _table(flags: int) -> int:
    """The bytes of a colour table its flags announce."""
    return 3 * (2 << (flags & 7)) if flags & 0x80 else 0


def _past_blocks(data: bytes, at: int) -> int:
    while data[at]:
        at += data[at] + 1
    return at + 1


def _webp_frames(data: bytes) -> int:
    """An animated WebP's ``ANMF`` chunks (each at most the canvas: libwebp refuses a
    larger one); a still WebP is one frame."""
    frames, at = 0, 12
    while at + 8 <= len(data):
        size = int.from_bytes(data[at + 4 : at + 8], "little")
        frames += data[at : at + 4] == b"ANMF"
        at += 8 + size + (size & 1)
    return max(frames, 1)


def _le(data: bytes, at: int) -> int:
    if at + 2 > len(data):
        raise IndexError("past the data")
    return int.from_bytes(data[at : at + 2], "little")
